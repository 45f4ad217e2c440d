package store

/*
#include "sqlite3.h"

// mi_no_memstatus turns off SQLite's memory statistics. It must run
// before SQLite initializes (its first connection); later it returns
// SQLITE_MISUSE and changes nothing.
static int mi_no_memstatus(void) {
	return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
*/
import "C"

// SQLite's memory statistics (on unless compiled out, and go-sqlite3 does
// not) count every allocation under a process-wide mutex: with the
// connections' own mutexes, pthread_mutex_lock and unlock were 2 % of the
// CPU of a hot namespace's ingest (perf, BenchmarkApplyHotNamespace). No
// one reads the statistics, so they are turned off as the package loads,
// before any connection opens; every connection is opened without its
// own mutex (_mutex=no: database/sql never uses a connection from two
// goroutines at once, and sqlite3_interrupt, which the driver calls from
// another goroutine when a context ends, takes no mutex).
//
// sqliteConfigRC is what sqlite3_config returned: SQLITE_OK (0) when the
// statistics are off, SQLITE_MISUSE when SQLite had initialized before
// this package loaded (TestSQLiteMemoryStatisticsAreOff).
var sqliteConfigRC = int(C.mi_no_memstatus())

// sqliteMemoryUsed is SQLite's count of the bytes it holds: 0 while its
// memory statistics are off.
func sqliteMemoryUsed() int64 { return int64(C.sqlite3_memory_used()) }
