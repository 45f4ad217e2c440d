package node

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"memindex/internal/natsconn"
)

// Where `serve --auth` keeps the embedded server's credentials, under the
// data directory.
const (
	AuthDir        = "auth"
	WorkerSeedFile = "worker.nk"
	AdminSeedFile  = "admin.nk"
)

// EmbeddedAuth is the credentials of an embedded server started with --auth:
// two nkey users, each a seed file (mode 0600) in DATA/auth (mode 0700).
// The worker connects as one; people and tools (memindex publish, search,
// status, dlq; the nats CLI) connect as the other with --nkey. Only the
// public keys go into the server's configuration.
type EmbeddedAuth struct {
	WorkerSeed string // path of the worker's seed file
	AdminSeed  string // path of the admin's seed file
	users      []*server.NkeyUser
}

// Users returns the nkey users a server accepting these credentials
// configures (their public keys only).
func (a *EmbeddedAuth) Users() []*server.NkeyUser { return a.users }

// LoadOrCreateAuth reads the seed files under dataDir/auth, generating any
// that is missing, so credentials survive restarts. A seed file others can
// read, or one that does not hold an nkey user seed, is an error that says
// what to do; its content is never quoted.
func LoadOrCreateAuth(dataDir string) (*EmbeddedAuth, error) {
	dir := filepath.Join(dataDir, AuthDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("--auth: credentials directory: %w", err)
	}
	a := &EmbeddedAuth{WorkerSeed: filepath.Join(dir, WorkerSeedFile), AdminSeed: filepath.Join(dir, AdminSeedFile)}
	for _, path := range []string{a.WorkerSeed, a.AdminSeed} {
		pub, err := loadOrCreateSeed(path)
		if err != nil {
			return nil, fmt.Errorf("--auth: %w", err)
		}
		a.users = append(a.users, &server.NkeyUser{Nkey: pub})
	}
	return a, nil
}

// embeddedAuthFor loads or creates the credentials of an embedded server
// with --auth and points conn, the worker's connection, at the worker seed.
func embeddedAuthFor(dataDir string, conn *natsconn.Config) (*EmbeddedAuth, error) {
	if conn.Creds != "" || conn.NKey != "" || conn.User != "" || conn.Token != "" {
		return nil, errors.New("--auth: the worker connects to its embedded server with the generated worker nkey; " +
			"unset --creds, --nkey, --user and --token (and NATS_CREDS, NATS_NKEY, NATS_USER, NATS_TOKEN)")
	}
	a, err := LoadOrCreateAuth(dataDir)
	if err != nil {
		return nil, err
	}
	conn.NKey = a.WorkerSeed
	return a, nil
}

// loadOrCreateSeed returns the public key of the nkey user seed in path,
// writing a new seed there first when the file does not exist.
func loadOrCreateSeed(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if b, err = writeNewSeed(path); err != nil {
			return "", err
		}
	} else if err != nil {
		return "", err
	}
	defer wipe(b)
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%s is accessible to other users (mode %04o); run chmod 600 %s", path, st.Mode().Perm(), path)
	}
	kp, err := nkeys.FromSeed(bytes.TrimSpace(b))
	if err != nil {
		return "", fmt.Errorf("%s does not hold an nkey user seed; move it away and restart to generate new credentials", path)
	}
	defer kp.Wipe()
	pub, err := kp.PublicKey()
	if err != nil || !nkeys.IsValidPublicUserKey(pub) {
		return "", fmt.Errorf("%s does not hold an nkey user seed; move it away and restart to generate new credentials", path)
	}
	return pub, nil
}

// writeNewSeed creates a user nkey and writes its seed to path (mode 0600)
// through a temporary file, so a crash leaves no half-written seed.
func writeNewSeed(path string) ([]byte, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return nil, fmt.Errorf("generate nkey: %w", err)
	}
	defer kp.Wipe()
	seed, err := kp.Seed()
	if err != nil {
		return nil, fmt.Errorf("generate nkey: %w", err)
	}
	b := append(seed, '\n')
	f, err := os.CreateTemp(filepath.Dir(path), ".seed-*") // mode 0600
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	_, werr := f.Write(b)
	if werr == nil {
		werr = f.Sync()
	}
	if err := errors.Join(werr, f.Close()); err != nil {
		os.Remove(f.Name())
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return b, nil
}

// wipe overwrites a secret held in b.
func wipe(b []byte) {
	for i := range b {
		b[i] = 'x'
	}
}
