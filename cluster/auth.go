package cluster

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// passwordFileName is the file, in the cluster's dir, that holds a RequirePass password (mode
// 0600), so that `ratelab cluster up --requirepass` can hand it over without printing it.
const passwordFileName = "password"

// TLSFiles names the PEM files of a TLS connection. For local nodes CertFile/KeyFile are the
// nodes' own certificate (used as server and as client on the cluster bus) and CAFile verifies
// peers; for a client of an external cluster CAFile verifies the servers and CertFile/KeyFile,
// when both are set, are the client certificate.
type TLSFiles struct {
	// CAFile is a PEM bundle of the certificate authorities to trust; "" uses the system pool
	// (clients only).
	CAFile string `json:"ca_file,omitempty"`
	// CertFile is a PEM certificate.
	CertFile string `json:"cert_file,omitempty"`
	// KeyFile is the PEM private key of CertFile.
	KeyFile string `json:"key_file,omitempty"`
}

// String names the files (paths are not secrets; their contents never appear).
func (f *TLSFiles) String() string {
	if f == nil {
		return "off"
	}
	return fmt.Sprintf("ca=%q cert=%q key=%q", f.CAFile, f.CertFile, f.KeyFile)
}

// ClientConfig loads the files into a client tls.Config: RootCAs from CAFile (system pool when
// ""), and a client certificate when CertFile and KeyFile are both set. The server name is taken
// from each address dialled.
func (f *TLSFiles) ClientConfig() (*tls.Config, error) {
	if f == nil {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.CAFile != "" {
		pem, err := os.ReadFile(f.CAFile)
		if err != nil {
			return nil, fmt.Errorf("cluster: TLS CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("cluster: TLS CA file %q holds no PEM certificate; pass a PEM bundle", f.CAFile)
		}
		c.RootCAs = pool
	}
	switch {
	case f.CertFile != "" && f.KeyFile != "":
		cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("cluster: TLS cert %q / key %q: %w", f.CertFile, f.KeyFile, err)
		}
		c.Certificates = []tls.Certificate{cert}
	case f.CertFile != "" || f.KeyFile != "":
		return nil, fmt.Errorf("cluster: TLS cert = %q, key = %q: give both files or neither", f.CertFile, f.KeyFile)
	}
	return c, nil
}

// auth is how this package's own connections authenticate: ACL user (""=default), password and
// TLS. The zero value is plain TCP without AUTH.
type auth struct {
	user, password string
	tls            *tls.Config
}

// apply sets a on a single-node client's options.
func (a auth) apply(o *redis.Options) {
	o.Username, o.Password = a.user, a.password
	if a.tls != nil {
		o.TLSConfig = a.tls.Clone()
	}
}

// controlClient is newNodeClient with the cluster's credentials.
func (l *Local) controlClient(addr string) *redis.Client {
	o := nodeClientOptions(addr)
	l.auth.apply(o)
	return redis.NewClient(o)
}

// Password returns the password set with Options.RequirePass ("" without it). Hand it to
// clients; never log it.
func (l *Local) Password() string { return l.auth.password }

// ClientOptions returns go-redis cluster options that reach this cluster: its addresses and,
// when set, the password and TLS configuration its nodes require. Callers add timeouts and pool
// sizes.
func (l *Local) ClientOptions() *redis.ClusterOptions {
	o := &redis.ClusterOptions{Addrs: l.Addrs(), Username: l.auth.user, Password: l.auth.password}
	if l.auth.tls != nil {
		o.TLSConfig = l.auth.tls.Clone()
	}
	return o
}

// ACLSetUser runs ACL SETUSER name rules... on every node (ACL users are per node, not
// replicated in a cluster), e.g. ACLSetUser(ctx, "app", "on", ">secret", "~*", "+@all").
func (l *Local) ACLSetUser(ctx context.Context, name string, rules ...string) error {
	l.mu.Lock()
	members := append([]*member(nil), l.members...)
	l.mu.Unlock()
	args := []any{"ACL", "SETUSER", name}
	for _, r := range rules {
		args = append(args, r)
	}
	for _, m := range members {
		if m == nil {
			continue
		}
		if err := m.client.Do(ctx, args...).Err(); err != nil {
			// The rules may hold a password (">..."): name the user and node only.
			return fmt.Errorf("cluster: ACL SETUSER %s on %s: %w", name, m.Addr, err)
		}
	}
	return nil
}

// newPassword returns 32 random bytes in hex.
func newPassword() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("cluster: generate a password: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// writePasswordFile stores pw in dir/password with mode 0600.
func writePasswordFile(dir, pw string) (string, error) {
	path := filepath.Join(dir, passwordFileName)
	if err := os.WriteFile(path, []byte(pw+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("cluster: write password file: %w", err)
	}
	return path, nil
}

// readPasswordFile reads a password file written by writePasswordFile (or by a user: one line).
func readPasswordFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("cluster: password file: %w", err)
	}
	pw := strings.TrimRight(string(b), "\r\n")
	if pw == "" {
		return "", fmt.Errorf("cluster: password file %q is empty; write the password on its first line", path)
	}
	return pw, nil
}

// authConfig renders the redis.conf lines of opts' password and TLS; "" when neither is set.
// port is the node's port, which under TLS is its tls-port (the plain port is off).
func authConfig(port int, opts Options) string {
	var b strings.Builder
	if opts.password != "" {
		// Hex only, so no quoting is needed. masterauth: replicas authenticate to primaries.
		fmt.Fprintf(&b, "requirepass %s\nmasterauth %s\n", opts.password, opts.password)
	}
	if t := opts.TLS; t != nil {
		fmt.Fprintf(&b, "port 0\ntls-port %d\n", port)
		fmt.Fprintf(&b, "tls-cert-file %q\ntls-key-file %q\ntls-ca-cert-file %q\n", t.CertFile, t.KeyFile, t.CAFile)
		// The cluster bus (tls-port+10000) and replication use TLS too; clients need no
		// certificate of their own (the password or ACL user authenticates them).
		b.WriteString("tls-cluster yes\ntls-replication yes\ntls-auth-clients optional\n")
	}
	return b.String()
}

// pingRaw sends PING (after AUTH when a has a password) over a fresh connection, TLS when a
// has it. It is used before a go-redis client exists, so that a node still starting produces
// no client log noise.
func pingRaw(ctx context.Context, addr string, a auth) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	if a.tls != nil {
		conf := a.tls.Clone()
		if conf.ServerName == "" {
			// tls.Client does not derive it from the address (tls.Dial, which go-redis uses, does).
			conf.ServerName, _, _ = net.SplitHostPort(addr)
		}
		c = tls.Client(c, conf)
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	r := bufio.NewReader(c)
	if a.password != "" {
		args := []string{"AUTH", a.password}
		if a.user != "" {
			args = []string{"AUTH", a.user, a.password}
		}
		if _, err := c.Write(respCommand(args...)); err != nil {
			return err
		}
		line, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		if strings.TrimSpace(line) != "+OK" {
			return fmt.Errorf("AUTH answered %q", strings.TrimSpace(line))
		}
	}
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}

// respCommand encodes a command as a RESP array of bulk strings (safe for any argument bytes,
// unlike an inline command).
func respCommand(args ...string) []byte {
	var b strings.Builder
	b.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	return []byte(b.String())
}

// setupAuth generates the RequirePass password (into l.opts for redis.conf and a 0600 file in
// the cluster's dir) and loads the TLS client configuration of the control connections.
func (l *Local) setupAuth() error {
	if l.opts.RequirePass {
		pw, err := newPassword()
		if err != nil {
			return err
		}
		if _, err := writePasswordFile(l.root, pw); err != nil {
			return err
		}
		l.opts.password, l.auth.password = pw, pw
	}
	if l.opts.TLS != nil {
		c, err := l.opts.TLS.ClientConfig()
		if err != nil {
			return err
		}
		// The nodes' certificate is also a client certificate: harmless with
		// tls-auth-clients optional, and it lets a stricter node config accept us.
		l.auth.tls = c
	}
	return nil
}

// PasswordFile returns the path of the mode-0600 file holding the RequirePass password, ""
// without RequirePass. The file lives in the cluster's dir and goes with it.
func (l *Local) PasswordFile() string {
	if l.auth.password == "" || l.root == "" {
		return ""
	}
	return filepath.Join(l.root, passwordFileName)
}
