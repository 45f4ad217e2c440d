package store

/*
#include <stddef.h>
#include "sqlite3.h"

// sqlite3_vec_init is sqlite-vec's entry point, compiled into the binary by
// github.com/asg017/sqlite-vec-go-bindings/cgo.
extern int sqlite3_vec_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi);

// memindex_vec_init loads sqlite-vec into a new connection unless the
// connection's URI says memindex_novec=1: a shard opened with
// Config.NoSqliteVec then runs exactly as on a build without sqlite-vec.
static int memindex_vec_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi) {
	const char *f = sqlite3_db_filename(db, "main");
	if (f != NULL && sqlite3_uri_boolean(f, "memindex_novec", 0)) {
		return SQLITE_OK;
	}
	return sqlite3_vec_init(db, pzErrMsg, pApi);
}

static int memindex_vec_auto(void) {
	return sqlite3_auto_extension((void (*)(void))memindex_vec_init);
}
*/
import "C"

import (
	"fmt"

	_ "github.com/asg017/sqlite-vec-go-bindings/cgo" // links sqlite3_vec_init
)

// noVecParam is the URI parameter that keeps sqlite-vec out of a connection.
const noVecParam = "memindex_novec=1"

// autoLoadVec makes every SQLite connection opened from now on load
// sqlite-vec, except those whose URI carries noVecParam. It replaces the
// bindings' vec.Auto, which cannot be turned off per connection.
func autoLoadVec() error {
	if rc := C.memindex_vec_auto(); rc != C.SQLITE_OK {
		return fmt.Errorf("register sqlite-vec: sqlite error %d", int(rc))
	}
	return nil
}
