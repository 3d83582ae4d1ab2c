package docker

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/moby/moby/client"
)

// LocalImage is the tag BuildLocalImage gives the image it builds.
const LocalImage = "ratelab/redis-local:latest"

// labelContent records the sha256 of the files a BuildLocalImage image holds.
const labelContent = "ratelab.content-sha256"

// BuildLocalImage builds tag (default LocalImage) from the redis-server found on PATH (or at
// redisServer) and the shared libraries ldd lists for it, in a FROM scratch image: nothing is
// pulled, so it works without registry access. The image runs `redis-server <conf>` with /data
// as its working dir, like the official image. When tag already holds exactly these files
// (a content label says so) nothing is built. It returns the tag, and wraps ErrNoDocker when no
// Docker engine answers.
func BuildLocalImage(ctx context.Context, redisServer, tag string) (string, error) {
	if redisServer == "" {
		redisServer = "redis-server"
	}
	if tag == "" {
		tag = LocalImage
	}
	cli, err := newClient(ctx)
	if err != nil {
		return "", err
	}
	defer cli.Close()
	bin, err := exec.LookPath(redisServer)
	if err != nil {
		return "", fmt.Errorf("docker: BuildLocalImage: redis-server %q: %w; install it with `make redis`", redisServer, err)
	}
	if bin, err = filepath.EvalSymlinks(bin); err != nil {
		return "", fmt.Errorf("docker: BuildLocalImage: %w", err)
	}
	libs, err := sharedLibs(ctx, bin)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	sum := sha256.New()
	add := func(name string, mode int64, body []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(body))}); err != nil {
			return err
		}
		_, err := tw.Write(body)
		return err
	}
	var df strings.Builder
	df.WriteString("FROM scratch\n")
	files := append([]string{bin}, libs...)
	for i, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("docker: BuildLocalImage: %w", err)
		}
		fmt.Fprintf(sum, "%s %d\n", f, len(b))
		sum.Write(b)
		name := fmt.Sprintf("f%d", i)
		if err := add(name, 0o755, b); err != nil {
			return "", fmt.Errorf("docker: BuildLocalImage: tar: %w", err)
		}
		dst := f
		if i == 0 {
			dst = "/usr/local/bin/redis-server"
		}
		fmt.Fprintf(&df, "COPY %s %s\n", name, dst)
	}
	// The label lets a later call see that tag already holds these exact files and skip the
	// build (parallel test processes then never rebuild the tag under each other).
	digest := hex.EncodeToString(sum.Sum(nil))
	if res, err := cli.ImageInspect(ctx, tag); err == nil && res.Config != nil && res.Config.Labels[labelContent] == digest {
		return tag, nil
	}
	fmt.Fprintf(&df, "LABEL %s=%s\n", labelContent, digest)
	// Docker gives a container a default PATH only when the image sets none; set it.
	df.WriteString("ENV PATH=/usr/local/bin:/usr/bin:/bin\nWORKDIR /data\nCMD [\"redis-server\"]\n")
	if err := add("Dockerfile", 0o644, []byte(df.String())); err != nil {
		return "", fmt.Errorf("docker: BuildLocalImage: tar: %w", err)
	}
	if err := tw.Close(); err != nil {
		return "", fmt.Errorf("docker: BuildLocalImage: tar: %w", err)
	}
	err = build(ctx, cli, buf.Bytes(), tag)
	if err != nil {
		// One retry: a build racing another process's build of the same layers can fail
		// transiently on some storage drivers.
		err = build(ctx, cli, buf.Bytes(), tag)
	}
	if err != nil {
		return "", err
	}
	return tag, nil
}

// build sends a tar build context to the engine and waits for the build's end.
func build(ctx context.Context, cli *client.Client, tarball []byte, tag string) error {
	res, err := cli.ImageBuild(ctx, bytes.NewReader(tarball), client.ImageBuildOptions{Tags: []string{tag}, Remove: true, ForceRemove: true})
	if err != nil {
		return fmt.Errorf("docker: build %s: %w", tag, err)
	}
	defer res.Body.Close()
	// The build streams JSON messages; a failed step is one with "error".
	dec := json.NewDecoder(res.Body)
	for {
		var msg struct {
			Error string `json:"error"`
		}
		if err := dec.Decode(&msg); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("docker: build %s: reading the build output: %w", tag, err)
		}
		if msg.Error != "" {
			return fmt.Errorf("docker: build %s: %s", tag, msg.Error)
		}
	}
}

// sharedLibs lists the absolute paths of bin's shared libraries and its ELF interpreter, as
// ldd prints them ("libx.so => /lib/.../libx.so (0x...)" and "/lib64/ld-linux-x86-64.so.2 (0x...)").
func sharedLibs(ctx context.Context, bin string) ([]string, error) {
	out, err := exec.CommandContext(ctx, "ldd", bin).Output()
	if err != nil {
		return nil, fmt.Errorf("docker: ldd %s: %w (a statically linked redis-server needs no libraries; install ldd or use an image)", bin, err)
	}
	var libs []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		for i, w := range f {
			if strings.HasPrefix(w, "/") && (i == 0 || f[i-1] == "=>") {
				libs = append(libs, w)
			}
		}
	}
	return libs, nil
}
