package deployments

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
)

// setTenantPasswords sets the password variables nats-tenants.conf reads.
func setTenantPasswords(t *testing.T) {
	t.Helper()
	t.Setenv("MEMINDEX_WORKER_PASSWORD", "worker-pw")
	t.Setenv("MEMINDEX_ALICE_PASSWORD", "alice-pw")
	t.Setenv("MEMINDEX_BOB_PASSWORD", "bob-pw")
}

// TestTenantsConfigParses loads nats-tenants.conf as nats-server does and
// checks the permissions it promises: each tenant user may publish only to
// its own namespace's three subjects and subscribe only to _INBOX.>.
func TestTenantsConfigParses(t *testing.T) {
	setTenantPasswords(t)
	opts, err := server.ProcessConfigFile("nats-tenants.conf")
	if err != nil {
		t.Fatalf("ProcessConfigFile(nats-tenants.conf): %v", err)
	}
	if !opts.JetStream {
		t.Fatal("JetStream is not enabled")
	}
	users := map[string]*server.User{}
	for _, u := range opts.Users {
		users[u.Username] = u
	}
	for _, ns := range []string{"alice", "bob"} {
		u := users[ns]
		if u == nil {
			t.Fatalf("user %s missing; users: %v", ns, slices.Sorted(maps.Keys(users)))
		}
		if u.Account == nil || u.Account.Name != ns {
			t.Fatalf("user %s is in account %v, want its own account %q", ns, u.Account, ns)
		}
		if u.Password != ns+"-pw" {
			t.Fatalf("user %s password not taken from MEMINDEX_%s_PASSWORD", ns, strings.ToUpper(ns))
		}
		p := u.Permissions
		wantPub := []string{"memindex.events." + ns, "memindex.search." + ns, "memindex.read." + ns}
		if p == nil || p.Publish == nil || !slices.Equal(p.Publish.Allow, wantPub) || len(p.Publish.Deny) != 0 {
			t.Fatalf("user %s publish permissions %+v, want allow %v only", ns, p.Publish, wantPub)
		}
		if p.Subscribe == nil || !slices.Equal(p.Subscribe.Allow, []string{"_INBOX.>"}) {
			t.Fatalf("user %s subscribe permissions %+v, want allow [_INBOX.>] only", ns, p.Subscribe)
		}
	}
	w := users["memindex-worker"]
	if w == nil || w.Account == nil || w.Account.Name != "MEMINDEX" {
		t.Fatalf("worker user %+v, want memindex-worker in account MEMINDEX", w)
	}
	for _, need := range []string{"$JS.API.>", "$JS.ACK.>", "memindex.>", "$SRV.>", "_INBOX.>", "_R_.>"} {
		if !slices.Contains(w.Permissions.Publish.Allow, need) {
			t.Errorf("worker may not publish to %s; it needs to", need)
		}
	}
}

// TestTenantsConfigNeedsPasswords: an unset password variable stops the
// server with an error naming it, instead of an empty password.
func TestTenantsConfigNeedsPasswords(t *testing.T) {
	setTenantPasswords(t)
	os.Unsetenv("MEMINDEX_BOB_PASSWORD") // t.Setenv restores it
	_, err := server.ProcessConfigFile("nats-tenants.conf")
	if err == nil || !strings.Contains(err.Error(), "MEMINDEX_BOB_PASSWORD") {
		t.Fatalf("ProcessConfigFile without MEMINDEX_BOB_PASSWORD: err=%v, want an error naming the variable", err)
	}
}

// TestTenantsConfigRefusesForeignImport: the exports' account token
// position refuses an account that imports another tenant's subject.
func TestTenantsConfigRefusesForeignImport(t *testing.T) {
	setTenantPasswords(t)
	b, err := os.ReadFile("nats-tenants.conf")
	if err != nil {
		t.Fatal(err)
	}
	const own = `{ service: { account: MEMINDEX, subject: "memindex.search.alice" } }`
	if !strings.Contains(string(b), own) {
		t.Fatalf("nats-tenants.conf has no line %s", own)
	}
	bad := strings.Replace(string(b), own, `{ service: { account: MEMINDEX, subject: "memindex.search.bob" } }`, 1)
	path := filepath.Join(t.TempDir(), "bad.conf")
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(path)
	if err == nil {
		opts.Port, opts.StoreDir, opts.NoLog, opts.NoSigs = -1, t.TempDir(), true, true
		var s *server.Server
		if s, err = server.NewServer(opts); err == nil {
			s.Shutdown()
		}
	}
	if err == nil || !strings.Contains(err.Error(), "not authorized") {
		t.Fatalf("account alice importing memindex.search.bob: err=%v, want the import refused as not authorized", err)
	}
}
