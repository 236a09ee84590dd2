package state_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/learnerassignor/learner/kgolearner"
	"github.com/learnerassignor/learner/kgolearner/state"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// selfSigned returns a certificate for 127.0.0.1 signed by itself, and a
// pool that trusts it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kfake"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}, pool
}

// A TLS handshake the broker refuses (here a member without the client
// certificate the broker requires) stops Run at once, as Run's rule says
// of a TLS handshake that fails: retrying cannot fix the member's TLS
// configuration. Go's TLS reports the broker's refusal, an alert, as a
// *net.OpError ("remote error: tls: ..."), which Run took for an error of
// the connection and retried until ctx was done, each attempt an Error
// event; kgo does not retry it either.
func TestRunStartTLSRefusedFailsAtOnce(t *testing.T) {
	for _, version := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		t.Run(tls.VersionName(version), func(t *testing.T) {
			cert, pool := selfSigned(t)
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "in"), kfake.TLS(&tls.Config{
				Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool,
				MinVersion: version, MaxVersion: version}))
			require.NoError(t, err)
			t.Cleanup(c.Close)
			var events startEvents
			rt, err := state.New(state.Config{Group: "g", Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 2, Stateful: true}},
				Process:    func(*state.Context, *kgo.Record) error { return nil },
				ClientOpts: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...), kgo.DialTLSConfig(&tls.Config{RootCAs: pool, MinVersion: version, MaxVersion: version})},
				Observer:   state.Observer{Error: func(err error) { t.Log(err); events.add(err) }}})
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			err = rt.Run(ctx)
			t.Logf("Run: %v after %v", err, time.Since(start))
			require.Error(t, err)
			require.NotErrorIs(t, err, context.DeadlineExceeded, "Run retried a TLS handshake the broker refused until ctx was done")
			require.Empty(t, events.all(), "Error events: the refused handshake was retried")
		})
	}
}
