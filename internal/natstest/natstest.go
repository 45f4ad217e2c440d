// Package natstest starts real in-process nats-servers with JetStream for
// tests. It owns test scaffolding only and must not be imported by non-test
// code.
package natstest

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Server starts an in-process nats-server with JetStream on a random port,
// its store in a temporary directory, and shuts it down when the test ends.
func Server(tb testing.TB) *server.Server {
	tb.Helper()
	return ServerIn(tb, tb.TempDir())
}

// ServerIn is Server with the JetStream store in dir, so a test can restart
// a server on the same data.
func ServerIn(tb testing.TB, dir string) *server.Server {
	tb.Helper()
	return ServerWith(tb, dir, nil)
}

// ServerWith is ServerIn with set, when not nil, changing the server's
// options before it starts (limits a test needs to reach).
func ServerWith(tb testing.TB, dir string, set func(*server.Options)) *server.Server {
	tb.Helper()
	opts := &server.Options{
		Host:      "127.0.0.1",
		Port:      -1,
		JetStream: true,
		StoreDir:  dir,
		NoLog:     true,
		NoSigs:    true,
	}
	if set != nil {
		set(opts)
	}
	s, err := server.NewServer(opts)
	if err != nil {
		tb.Fatalf("new nats-server: %v", err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		tb.Fatal("nats-server not ready within 10s")
	}
	tb.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s
}

// Connect connects to s and closes the connection when the test ends.
func Connect(tb testing.TB, s *server.Server) *nats.Conn {
	tb.Helper()
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		tb.Fatalf("connect: %v", err)
	}
	tb.Cleanup(nc.Close)
	return nc
}

// ConnectJetStream connects to s (closed when the test ends) and returns
// the connection with a JetStream context on it made with opts.
func ConnectJetStream(tb testing.TB, s *server.Server, opts ...jetstream.JetStreamOpt) (*nats.Conn, jetstream.JetStream) {
	tb.Helper()
	nc := Connect(tb, s)
	js, err := jetstream.New(nc, opts...)
	if err != nil {
		tb.Fatalf("jetstream: %v", err)
	}
	return nc, js
}

// WaitUntil polls cond every 20ms until it holds, and fails tb naming what
// it waited for when it does not within d.
func WaitUntil(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
}
