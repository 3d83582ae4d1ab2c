package cluster

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// PasswordEnv is the environment variable an external cluster's password is read from when no
// password file is given. A password never comes from the command line: argv is visible to every
// user of the machine (ps, /proc) and lands in shell history and CI logs.
const PasswordEnv = "RATELAB_REDIS_PASSWORD"

// DefaultMinFreeMemory is the least free memory (maxmemory - used_memory) ConnectExternal accepts
// on a primary that has maxmemory set.
const DefaultMinFreeMemory = 64 << 20

// ExternalConfig describes a Redis Cluster that someone else runs. Its String, GoString and JSON
// forms never contain the password.
type ExternalConfig struct {
	// Addrs are seed nodes "host:port"; the others are discovered with CLUSTER NODES.
	Addrs []string `json:"addrs"`
	// User is the ACL user; "" is the default user.
	User string `json:"user,omitempty"`
	// Password authenticates User. ConnectExternal fills it from PasswordFile, or else from
	// $RATELAB_REDIS_PASSWORD, when it is empty. Never printed, never encoded.
	Password string `json:"-"`
	// PasswordFile is a file whose first line is the password (--password-file).
	PasswordFile string `json:"password_file,omitempty"`
	// TLS, when set, makes every connection TLS (a rediss:// URL sets an empty one: system CAs).
	TLS *TLSFiles `json:"tls,omitempty"`
	// AllowFaults lets fault methods act on the cluster (--allow-faults). Default false: they
	// return ErrFaultsRefused, because the cluster may serve someone's production traffic.
	AllowFaults bool `json:"allow_faults,omitempty"`
	// MinFreeMemory is the least free memory, in bytes, a primary with maxmemory set must have;
	// 0 means DefaultMinFreeMemory, a negative value skips the check.
	MinFreeMemory int64 `json:"min_free_memory,omitempty"`
}

// ParseExternal parses `redis://[user@]host:port[,host:port...]` (or rediss:// for TLS with the
// system CAs; set TLS files on the result for a private CA or a client certificate). A URL that
// holds a password is refused: pass it with $RATELAB_REDIS_PASSWORD or --password-file.
func ParseExternal(spec string) (ExternalConfig, error) {
	var c ExternalConfig
	rest, ok := strings.CutPrefix(spec, "redis://")
	if !ok {
		if rest, ok = strings.CutPrefix(spec, "rediss://"); ok {
			c.TLS = &TLSFiles{}
		}
	}
	if !ok {
		return c, fmt.Errorf("cluster: --cluster %q: want redis://[user@]host:port[,host:port...] or rediss://... for TLS", RedactURL(spec))
	}
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		userinfo := rest[:i]
		rest = rest[i+1:]
		if strings.Contains(userinfo, ":") {
			return ExternalConfig{}, fmt.Errorf("cluster: --cluster %s: the URL holds a password, which would be visible to every user of this machine (ps) "+
				"and kept in shell history and CI logs; remove it from the URL and set $%s or pass --password-file", RedactURL(spec), PasswordEnv)
		}
		if userinfo == "" {
			return ExternalConfig{}, fmt.Errorf("cluster: --cluster %s: empty user before '@'; drop the '@' for the default user", spec)
		}
		c.User = userinfo
	}
	if strings.ContainsAny(rest, "/?#") {
		return ExternalConfig{}, fmt.Errorf("cluster: --cluster %s: a cluster URL has no database, path or query; want host:port[,host:port...] after the scheme", RedactURL(spec))
	}
	var probs []string
	for a := range strings.SplitSeq(rest, ",") {
		host, port, err := net.SplitHostPort(a)
		p, perr := strconv.Atoi(port)
		switch {
		case err != nil:
			probs = append(probs, fmt.Sprintf("address %q: %v", a, err))
		case host == "":
			probs = append(probs, fmt.Sprintf("address %q: empty host", a))
		case perr != nil || p < 1 || p > maxPort:
			probs = append(probs, fmt.Sprintf("address %q: port %q: want 1..%d", a, port, maxPort))
		default:
			c.Addrs = append(c.Addrs, net.JoinHostPort(host, port))
		}
	}
	if len(probs) > 0 {
		return ExternalConfig{}, fmt.Errorf("cluster: --cluster %s: %s", RedactURL(spec), strings.Join(probs, "; "))
	}
	return c, nil
}

// String renders c as a URL plus where the password comes from, never the password itself.
func (c ExternalConfig) String() string {
	scheme := "redis://"
	if c.TLS != nil {
		scheme = "rediss://"
	}
	user := ""
	if c.User != "" {
		user = c.User + "@"
	}
	pw := "none"
	switch {
	case c.Password != "":
		pw = "set (redacted)"
	case c.PasswordFile != "":
		pw = "file " + strconv.Quote(c.PasswordFile)
	}
	s := fmt.Sprintf("%s%s%s (password: %s", scheme, user, strings.Join(c.Addrs, ","), pw)
	if c.TLS != nil {
		s += ", tls: " + c.TLS.String()
	}
	if c.AllowFaults {
		s += ", faults allowed"
	}
	return s + ")"
}

// GoString is String, so %#v does not print the password either.
func (c ExternalConfig) GoString() string { return "cluster.ExternalConfig{" + c.String() + "}" }

// Redact replaces every occurrence of c's password in s (an error text, a log line) with "***",
// and a password in a redis:// URL as RedactURL does.
func (c ExternalConfig) Redact(s string) string {
	if c.Password != "" {
		s = strings.ReplaceAll(s, c.Password, "***")
	}
	return RedactURL(s)
}

// RedactURL replaces the password of every redis:// or rediss:// URL in s with "***".
func RedactURL(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "redis")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		s = s[i:]
		rest, ok := strings.CutPrefix(s, "redis://")
		if !ok {
			rest, ok = strings.CutPrefix(s, "rediss://")
		}
		if !ok {
			b.WriteString("redis")
			s = s[len("redis"):]
			continue
		}
		b.WriteString(s[:len(s)-len(rest)])
		end := strings.IndexAny(rest, " \t\n\"'")
		if end < 0 {
			end = len(rest)
		}
		u := rest[:end]
		if at := strings.LastIndex(u, "@"); at >= 0 {
			if colon := strings.Index(u[:at], ":"); colon >= 0 {
				u = u[:colon] + ":***" + u[at:]
			}
		}
		b.WriteString(u)
		s = rest[end:]
	}
}

// resolvePassword fills c.Password from PasswordFile or the environment when it is empty.
func (c *ExternalConfig) resolvePassword(getenv func(string) string) error {
	if c.Password != "" {
		return nil
	}
	if c.PasswordFile != "" {
		pw, err := readPasswordFile(c.PasswordFile)
		if err != nil {
			return fmt.Errorf("cluster: --password-file: %w", err)
		}
		c.Password = pw
		return nil
	}
	c.Password = getenv(PasswordEnv)
	if c.User != "" && c.Password == "" {
		return fmt.Errorf("cluster: ACL user %q has no password: set $%s or pass --password-file", c.User, PasswordEnv)
	}
	return nil
}

// errFaults is the error of a fault asked of an external cluster.
func (c ExternalConfig) errFaults(what string) error {
	if !c.AllowFaults {
		return fmt.Errorf("cluster: %s on external cluster %s: %w (the cluster may be shared; pass --allow-faults only for a cluster you may break)",
			what, strings.Join(c.Addrs, ","), ErrFaultsRefused)
	}
	return fmt.Errorf("cluster: %s on external cluster %s: %w: ratelab has no access to the nodes' processes or network there", what, strings.Join(c.Addrs, ","), ErrUnsupported)
}

// osGetenv is os.Getenv, replaceable in tests of this package.
var osGetenv = os.Getenv
