package deploy_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
)

// imageConfig is the part of `podman image inspect` the test reads.
type imageConfig struct {
	Architecture string
	Os           string
	Config       struct {
		User       string
		Entrypoint []string
		Cmd        []string
		Env        []string
		Labels     map[string]string
		StopSignal string
	}
	RootFS struct{ Layers []string }
}

// TestImage checks the release's OCI image (built by scripts/release.sh
// with buildah, no daemon): its config (not root, the entrypoint and
// command, labels naming the version and licence) from the container
// storage, and from the oci-archive in dist/ its single layer, which holds
// the release's static binary, the account files and the CA bundle and
// nothing else (no shell). Then it runs the image with podman against
// MariaDB (`version`, `migrate`) where podman can run containers; where it
// cannot (this project's machines: see docs/install.md), the error is
// logged and the checks above stand.
func TestImage(t *testing.T) {
	t.Parallel()
	rel := releaseForHost(t)

	out, err := exec.Command("podman", "image", "inspect", rel.image).Output()
	require.NoError(t, err)
	var inspected []imageConfig
	require.NoError(t, json.Unmarshal(out, &inspected))
	require.Len(t, inspected, 1)
	img := inspected[0]
	require.Equal(t, runtime.GOARCH, img.Architecture)
	require.Equal(t, "linux", img.Os)
	require.Equal(t, "65532:65532", img.Config.User, "not root")
	require.Equal(t, []string{"/usr/bin/queuety"}, img.Config.Entrypoint)
	require.Equal(t, []string{"work"}, img.Config.Cmd)
	require.Contains(t, img.Config.Env, "QUEUETY_LOG_FORMAT=json")
	require.Equal(t, "SIGTERM", img.Config.StopSignal)
	require.Equal(t, rel.version, img.Config.Labels["org.opencontainers.image.version"])
	require.Equal(t, "GPL-2.0-or-later", img.Config.Labels["org.opencontainers.image.licenses"])
	require.Regexp(t, `^[0-9a-f]{40}$`, img.Config.Labels["org.opencontainers.image.revision"])
	require.Len(t, img.RootFS.Layers, 1, "FROM scratch and one COPY")

	binary, err := os.ReadFile(rel.binary)
	require.NoError(t, err)
	files := archiveLayerFiles(t, filepath.Join(rel.dist, "queuety_"+rel.version+"_linux_"+runtime.GOARCH+".oci.tar"))
	require.ElementsMatch(t, []string{"etc/ssl/certs/ca-certificates.crt", "etc/passwd", "etc/group", "usr/bin/queuety"}, keys(files))
	require.Equal(t, sha256.Sum256(binary), sha256.Sum256(files["usr/bin/queuety"].body), "the release's binary")
	require.EqualValues(t, 0o755, files["usr/bin/queuety"].mode)
	require.Contains(t, string(files["etc/passwd"].body), "queuety:x:65532:65532:")

	dsn := testdb.New(t)
	cfg := dbParts(t, dsn)
	podman := func(args ...string) (string, error) {
		out, err := exec.Command("podman", append([]string{"run", "--rm", "--network=host", rel.image}, args...)...).CombinedOutput()
		return string(out), err
	}
	version, err := podman("version")
	if err != nil {
		// Here: "crun: setrlimit `RLIMIT_NOFILE`: Operation not permitted"
		// (podman raises the limit above the sandbox's hard one), and with
		// the limits lowered "crun: cgroups in hybrid mode not supported".
		t.Logf("podman cannot run containers on this machine, so the image was checked, not run: %v: %s", err, version)
		return
	}
	require.Contains(t, version, "queuety "+rel.version+"\n")
	out2, err := podman("migrate", "--dsn", cfg.FormatDSN())
	require.NoError(t, err, out2)
	require.Empty(t, statuses(t, dsn, "wp_queuety_jobs"), "migrate created the jobs table (statuses fails without it)")
}

type layerFile struct {
	mode int64
	body []byte
}

// archiveLayerFiles reads the regular files of the single layer of the
// single image in an oci-archive.
func archiveLayerFiles(t *testing.T, archive string) map[string]layerFile {
	t.Helper()
	blobs := untar(t, archive)
	var index struct {
		Manifests []struct{ Digest string }
	}
	require.NoError(t, json.Unmarshal(blobs["index.json"], &index))
	require.Len(t, index.Manifests, 1)
	var manifest struct {
		Layers []struct{ MediaType, Digest string }
	}
	require.NoError(t, json.Unmarshal(blobs[blobPath(index.Manifests[0].Digest)], &manifest))
	require.Len(t, manifest.Layers, 1)
	layer := blobs[blobPath(manifest.Layers[0].Digest)]
	sum := sha256.Sum256(layer)
	require.Equal(t, "sha256:"+hex.EncodeToString(sum[:]), manifest.Layers[0].Digest)
	out := map[string]layerFile{}
	tr := tar.NewReader(layerReader(t, manifest.Layers[0].MediaType, layer))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		if h.Typeflag != tar.TypeReg {
			continue
		}
		body, err := io.ReadAll(tr)
		require.NoError(t, err)
		out[strings.TrimPrefix(h.Name, "./")] = layerFile{mode: h.Mode & 0o7777, body: body}
	}
	return out
}

func layerReader(t *testing.T, mediaType string, layer []byte) io.Reader {
	t.Helper()
	if strings.HasSuffix(mediaType, "+gzip") {
		zr, err := gzip.NewReader(bytes.NewReader(layer))
		require.NoError(t, err)
		return zr
	}
	return bytes.NewReader(layer)
}

func blobPath(digest string) string { return "blobs/" + strings.Replace(digest, ":", "/", 1) }

// untar returns the regular files of a tar file by name.
func untar(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	out := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			require.NoError(t, err)
			out[strings.TrimPrefix(h.Name, "./")] = b
		}
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
