package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"memindex"
	"memindex/internal/natstest"
	"memindex/node"
)

// testCA is a certificate authority made for one test.
type testCA struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	pemPath string // the CA certificate, PEM
	dir     string
}

var serial int64

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial++
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(serial),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ca := &testCA{cert: cert, key: key, dir: dir, pemPath: filepath.Join(dir, name+".pem")}
	writePEM(t, ca.pemPath, "CERTIFICATE", der)
	return ca
}

// issue returns the files of a certificate for 127.0.0.1 and localhost
// signed by ca, for a server or a client.
func (ca *testCA) issue(t *testing.T, name string, client bool) (certPath, keyPath string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial++
	usage := x509.ExtKeyUsageServerAuth
	if client {
		usage = x509.ExtKeyUsageClientAuth
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath = filepath.Join(ca.dir, name+".pem"), filepath.Join(ca.dir, name+"-key.pem")
	writePEM(t, certPath, "CERTIFICATE", der)
	writePEM(t, keyPath, "EC PRIVATE KEY", kder)
	return certPath, keyPath
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// tlsServer starts a nats-server with JetStream that requires TLS with the
// given certificate; with clientCA it also requires a client certificate
// signed by that CA.
func tlsServer(t *testing.T, certPath, keyPath, clientCA string) *server.Server {
	t.Helper()
	tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: certPath, KeyFile: keyPath, CaFile: clientCA, Verify: clientCA != ""})
	if err != nil {
		t.Fatalf("server TLS config: %v", err)
	}
	opts := &server.Options{
		Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
		TLS: true, TLSConfig: tc, TLSVerify: clientCA != "", TLSTimeout: 5,
		MaxPayload: memindex.MaxEventBytes + 64<<10,
	}
	return startServer(t, opts)
}

// startServer starts a nats-server with opts and stops it when the test ends.
func startServer(t *testing.T, opts *server.Options) *server.Server {
	t.Helper()
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatalf("new nats-server: %v", err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready within 10s")
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s
}

// connFromArgs parses args as a command's connection flags would be.
func connFromArgs(t *testing.T, args ...string) *connFlags {
	t.Helper()
	var c connFlags
	fs := newFlagSet("test", "")
	c.register(fs, "")
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	return &c
}

// TestTLSRefusesServerOfAnotherCA: a server whose certificate comes from
// CA2 while the client trusts CA1 is refused with an error saying so, both
// with --tlsca and with NATS_CA.
func TestTLSRefusesServerOfAnotherCA(t *testing.T) {
	ca1, ca2 := newTestCA(t, "ca1"), newTestCA(t, "ca2")
	cert, key := ca2.issue(t, "server", false)
	s := tlsServer(t, cert, key, "")
	byFlag := connFromArgs(t, "--server", s.ClientURL(), "--tlsca", ca1.pemPath, "--timeout", "3s")
	t.Setenv("NATS_CA", ca1.pemPath)
	byEnv := connFromArgs(t, "--server", s.ClientURL(), "--timeout", "3s")
	for name, c := range map[string]*connFlags{"--tlsca": byFlag, "NATS_CA": byEnv} {
		nc, err := c.Connect("test")
		if err == nil {
			nc.Close()
			t.Fatalf("%s: connected to a server whose certificate is from another CA", name)
		}
		t.Logf("%s: %v", name, err)
		for _, want := range []string{"not signed by a CA in " + ca1.pemPath + " (--tlsca or NATS_CA)", "refusing the connection", "unknown authority"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q, want it to contain %q", name, err, want)
			}
		}
	}
}

// TestTLSRefusesPlaintextServer: with a TLS option set (--tlsca, or a
// tls:// URL) a server without TLS is refused, never used in plaintext.
func TestTLSRefusesPlaintextServer(t *testing.T) {
	ca1 := newTestCA(t, "ca1")
	s := natstest.Server(t)
	hostPort := strings.TrimPrefix(s.ClientURL(), "nats://")
	for name, args := range map[string][]string{
		"--tlsca":    {"--server", s.ClientURL(), "--tlsca", ca1.pemPath},
		"tls:// URL": {"--server", "tls://" + hostPort},
	} {
		nc, err := connFromArgs(t, append(args, "--timeout", "3s")...).Connect("test")
		if err == nil {
			nc.Close()
			t.Fatalf("%s: connected in plaintext", name)
		}
		t.Logf("%s: %v", name, err)
		if !strings.Contains(err.Error(), "does not offer TLS, refusing plaintext") {
			t.Errorf("%s: error %q, want it to say the server does not offer TLS and plaintext is refused", name, err)
		}
	}
	// Without any TLS option the same server is fine: the refusal above
	// comes from TLS being asked for.
	nc, err := connFromArgs(t, "--server", s.ClientURL()).Connect("test")
	if err != nil {
		t.Fatalf("plaintext connect without TLS options: %v", err)
	}
	nc.Close()
}

// TestTLSWithTheRightCA: a worker and the status command connect with
// mutual TLS (--tlsca, --tlscert, --tlskey) to a server that requires a
// client certificate; without the client certificate the server refuses.
func TestTLSWithTheRightCA(t *testing.T) {
	ca1 := newTestCA(t, "ca1")
	scert, skey := ca1.issue(t, "server", false)
	ccert, ckey := ca1.issue(t, "client", true)
	s := tlsServer(t, scert, skey, ca1.pemPath)
	tlsArgs := []string{"--server", s.ClientURL(), "--tlsca", ca1.pemPath, "--tlscert", ccert, "--tlskey", ckey}

	cfg := testServeConfig(t.TempDir())
	cfg.NATS = connFromArgs(t, tlsArgs...).Config
	n, _ := runTestNode(t, cfg, nil)
	if st, err := n.Conn().TLSConnectionState(); err != nil || !st.HandshakeComplete {
		t.Fatalf("worker connection: TLS state %v, want a completed TLS handshake", err)
	}

	var out bytes.Buffer
	if err := runStatus(context.Background(), append(tlsArgs, "--json", "--wait", "500ms"), &out); err != nil {
		t.Fatalf("status over mutual TLS: %v", err)
	}
	var sts []memindex.StatusResponse
	if err := json.Unmarshal(out.Bytes(), &sts); err != nil || len(sts) != 1 || sts[0].Worker != "test" {
		t.Fatalf("status --json = %s (%v), want the one worker", out.String(), err)
	}

	nc, err := connFromArgs(t, "--server", s.ClientURL(), "--tlsca", ca1.pemPath, "--timeout", "3s").Connect("test")
	if err == nil {
		nc.Close()
		t.Fatal("connected without the client certificate the server requires")
	}
	if _, cerr := connFromArgs(t, "--tlscert", ccert).Resolve(); cerr == nil || !strings.Contains(cerr.Error(), "--tlskey") {
		t.Fatalf("--tlscert without --tlskey: %v, want an error naming --tlskey", cerr)
	}
}

// TestContextFileTLSAndNkey: a nats CLI context supplies the URL, the TLS
// files (cert, key, ca) and an nkey seed, as `nats context save` writes them.
func TestContextFileTLSAndNkey(t *testing.T) {
	ca1 := newTestCA(t, "ca1")
	scert, skey := ca1.issue(t, "server", false)
	ccert, ckey := ca1.issue(t, "client", true)
	auth, err := node.LoadOrCreateAuth(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: scert, KeyFile: skey, CaFile: ca1.pemPath, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, &server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
		TLS: true, TLSConfig: tc, TLSVerify: true, TLSTimeout: 5, Nkeys: auth.Users()})

	cfgHome := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfgHome)
	ctxDir := filepath.Join(cfgHome, "nats", "context")
	if err := os.MkdirAll(ctxDir, 0o700); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]string{"url": s.ClientURL(), "nkey": auth.AdminSeed, "cert": ccert, "key": ckey, "ca": ca1.pemPath})
	if err := os.WriteFile(filepath.Join(ctxDir, "memindex-test.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	nc, err := connFromArgs(t, "--context", "memindex-test").Connect("test")
	if err != nil {
		t.Fatalf("connect with the context: %v", err)
	}
	defer nc.Close()
	if st, err := nc.TLSConnectionState(); err != nil || !st.HandshakeComplete {
		t.Fatalf("connection with the context: TLS state %v, want a completed TLS handshake", err)
	}
}
