// Package deploy_test checks the deployment examples of deploy/ and the Dockerfile against the
// real broker. Nothing here has a Kubernetes cluster or a Docker engine, so the tests do what
// can be done without them: they read the manifests and the Dockerfile as the cluster and the
// image builder would, then run the real `queen` binary the way the pod would run it — the
// manifest's environment, its user and group, a working directory on a read-only root
// filesystem, and a writable directory only where the manifest mounts a volume (an example
// once set readOnlyRootFilesystem, mounted nothing, and left the spool at the relative
// ./queen-data/buffers, so the broker exited 1 with "mkdir queen-data: permission
// denied").
package deploy_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/queen-go/queen/internal/config"
	"github.com/queen-go/queen/internal/pgtest"
	"github.com/queen-go/queen/internal/testkit"
	"github.com/queen-go/queen/internal/testserver"
)

var testDSN string

// TestMain gives the package a fresh database (pgtest), which the brokers the tests start
// migrate and use as the Secret's DATABASE_URL.
func TestMain(m *testing.M) {
	pgtest.Main(m, func(dsn string) int {
		testDSN = dsn
		return m.Run()
	})
}

// The pod's values that come from the cluster, as the test supplies them.
const (
	podName = "queen-0" // fieldRef metadata.name
	// dockerHome is the HOME Docker gives a health check of the image's nonroot user (from
	// the image's /etc/passwd). It does not exist in the image, so queenctl finds no
	// configuration file there, which it reads as an empty one.
	dockerHome = "/home/nonroot"
)

// Every workload of deploy/kubernetes runs, as its pod would, from a read-only root: the broker
// starts, /health answers 200 on the probes' port, a push is stored (not spooled), the spool
// lies on the mounted volume, the image's HEALTHCHECK passes, and SIGTERM ends the broker with
// status 0 within the pod's grace period.
func TestKubernetesManifestStartsOnReadOnlyRoot(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the broker binary")
	}
	files, err := filepath.Glob(filepath.Join("kubernetes", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in deploy/kubernetes (%v)", err)
	}
	img := readDockerfile(t)
	bins := buildBinaries(t)
	ran := 0
	for _, file := range files {
		for _, w := range readWorkloads(t, file) {
			ran++
			t.Run(filepath.Base(file)+"/"+w.Kind, func(t *testing.T) { runWorkload(t, bins, img, w) })
		}
	}
	if ran == 0 {
		t.Fatal("no Deployment or StatefulSet in deploy/kubernetes")
	}
}

// The image keeps its spool on a volume the broker's user can write, in a plain `docker run`
// too, and has a health check that works without a shell (distroless has none).
func TestDockerfileSpoolVolumeAndHealthcheck(t *testing.T) {
	img := readDockerfile(t)
	spool := img.env["FILE_BUFFER_DIR"]
	switch {
	case spool == "":
		t.Error("the image sets no ENV FILE_BUFFER_DIR: the spool would be ./queen-data/buffers, under the working directory")
	case !path.IsAbs(spool):
		t.Errorf("the image's FILE_BUFFER_DIR %q is relative", spool)
	case img.volumeOf(spool) == "":
		t.Errorf("the image's FILE_BUFFER_DIR %q lies under no VOLUME (%v): a container with a read-only root cannot write it", spool, img.volumes)
	}
	// Relative paths (QUEEN_DATA_DIR's default ./queen-data) land on the volume too.
	if img.workdir == "" || img.volumeOf(img.workdir) == "" {
		t.Errorf("WORKDIR %q lies under no VOLUME (%v)", img.workdir, img.volumes)
	}
	// Docker fills a new volume with what the image has at its path, owner included; a path
	// the image lacks becomes a volume owned by root, which the nonroot user cannot write.
	for _, v := range img.volumes {
		ok := slices.ContainsFunc(img.copies, func(c dockerCopy) bool { return c.dest == v && c.chown == img.user })
		if !ok {
			t.Errorf("no COPY --chown=%s creates the VOLUME %s in the image: the volume would belong to root", img.user, v)
		}
	}
	if len(img.healthcheck) == 0 {
		t.Fatal("no HEALTHCHECK in exec form (CMD [...]); the image has no shell for the shell form")
	}
	if bin := img.healthcheck[0]; !img.has(bin) {
		t.Errorf("the HEALTHCHECK runs %s, which no COPY puts into the image (%v)", bin, img.copies)
	}
	if u := healthcheckURL(img.healthcheck); u == nil || !slices.Contains(img.expose, u.Port()) {
		t.Errorf("the HEALTHCHECK %q names no server on an EXPOSEd port (%v)", img.healthcheck, img.expose)
	}
}

// runWorkload is one workload's run: the static checks of the manifest, then the broker.
func runWorkload(t *testing.T, bins string, img dockerImage, w workload) {
	pod := w.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers; the test knows one", len(pod.Containers))
	}
	c := pod.Containers[0]
	sc := c.SecurityContext.over(pod.SecurityContext)
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Error("readOnlyRootFilesystem is not true; docs/deploy.md says it is")
	}
	if sc.RunAsUser == nil || sc.RunAsGroup == nil || *sc.RunAsUser == 0 {
		t.Fatalf("runAsUser and runAsGroup must name a non-root user: %+v", sc)
	}
	uid, gid := uint32(*sc.RunAsUser), uint32(*sc.RunAsGroup)
	if img.user != "" && img.user != fmt.Sprintf("%d:%d", uid, gid) {
		t.Errorf("the manifest runs as %d:%d, the image as USER %s", uid, gid, img.user)
	}

	env := resolveEnv(t, img, c)
	cfg, err := config.Load(nil, func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("the manifest's environment: %v", err)
	}
	port := c.containerPort(t, "")
	if cfg.Port != port {
		t.Errorf("the broker listens on %d, the container port is %d", cfg.Port, port)
	}
	for name, p := range map[string]*probe{"readinessProbe": c.ReadinessProbe, "livenessProbe": c.LivenessProbe} {
		switch {
		case p == nil || p.HTTPGet == nil:
			t.Errorf("no %s with httpGet", name)
		case p.HTTPGet.Path != "/health":
			t.Errorf("%s gets %q, not /health", name, p.HTTPGet.Path)
		case c.containerPort(t, p.HTTPGet.Port) != port:
			t.Errorf("%s's port %v is not the broker's %d", name, p.HTTPGet.Port, port)
		}
	}
	spool := cfg.FileBufferDir
	m := c.mountOf(spool)
	switch {
	case !filepath.IsAbs(spool):
		t.Errorf("the spool is %q, relative to the working directory, which is on the read-only root filesystem: set FILE_BUFFER_DIR under a mounted volume", spool)
	case m == nil:
		t.Errorf("the spool %s lies under no volume mount (%+v): the root filesystem is read-only", spool, c.VolumeMounts)
	case m.ReadOnly:
		t.Errorf("the spool's volume %s is mounted read-only", m.Name)
	case !w.writableVolume(m.Name):
		t.Errorf("the spool's mount %s is of no emptyDir, persistentVolumeClaim or volumeClaimTemplate", m.Name)
	}

	// The pod's filesystem: root stands for the read-only root filesystem, with a writable
	// directory, owned by the pod's user, at each mount of a writable volume.
	asRoot := os.Geteuid() == 0
	tmp := t.TempDir()
	openUp(t, tmp)
	root := filepath.Join(tmp, "root")
	mkdir(t, root)
	var readOnly []string // directories of the root filesystem, made read-only below
	for _, vm := range c.VolumeMounts {
		dir := filepath.Join(root, vm.MountPath)
		for d := filepath.Dir(dir); d != root && strings.HasPrefix(d, root); d = filepath.Dir(d) {
			readOnly = append(readOnly, d)
		}
		mkdir(t, dir)
		if vm.ReadOnly || !w.writableVolume(vm.Name) {
			readOnly = append(readOnly, dir)
			continue
		}
		if err := os.Chmod(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if asRoot {
			if err := os.Chown(dir, int(uid), int(gid)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, d := range append(readOnly, root) {
		if err := os.Chmod(d, 0o555); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { // so that the temporary directory can be removed by a user other than root
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = os.Chmod(p, 0o755)
			}
			return nil
		})
	})

	// The child's environment: the manifest's and the image's, with absolute paths moved under
	// root, and what the test must change: a free loopback port instead of 6632 (brokers of
	// other runs may hold it) and the test suite's pool size (pgtest.Budget).
	childEnv := maps.Clone(env)
	for _, k := range []string{"FILE_BUFFER_DIR", "QUEEN_DATA_DIR"} {
		if v := childEnv[k]; filepath.IsAbs(v) {
			childEnv[k] = filepath.Join(root, v)
		}
	}
	addr := freeAddr(t)
	host, p, _ := net.SplitHostPort(addr)
	childEnv["HOST"], childEnv["PORT"] = host, p
	childEnv["DB_POOL_SIZE"] = strconv.Itoa(testserver.PoolSize)

	var cred *syscall.Credential
	if asRoot {
		// As the pod's user, so that the permission bits count (root ignores them); the
		// pod's fsGroup is a supplementary group of the container's processes.
		cred = &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}}
		if f := pod.SecurityContext.FSGroup; f != nil {
			cred.Groups = []uint32{uint32(*f)}
		}
	} else {
		t.Logf("not root: the broker runs as uid %d, not the manifest's %d; the read-only working directory stops its writes all the same", os.Geteuid(), uid)
	}
	base := "http://" + addr
	b := startBroker(t, filepath.Join(bins, "queen"), root, childEnv, cred)
	b.waitHealthy(t, base, time.Minute)

	// A transactionId of its own: the workloads' brokers share the package's database.
	push := fmt.Sprintf(`{"items":[{"queue":"deploy-check","partition":"p","payload":{"n":1},"transactionId":"deploy-check-%d"}]}`,
		time.Now().UnixNano())
	if code, body := httpDo(t, "POST", base+"/api/v1/push", push); code != 201 || !strings.Contains(body, `"status":"queued"`) {
		t.Errorf("push: %d %s (want 201 queued: stored in PostgreSQL, not spooled)", code, body)
	}
	childCfg, err := config.Load(nil, func(k string) string { return childEnv[k] })
	if err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(childCfg.FileBufferDir, "spool.lock")
	if st, err := os.Stat(lock); err != nil {
		t.Errorf("the spool's lock file: %v", err)
	} else if owner := st.Sys().(*syscall.Stat_t).Uid; asRoot && owner != uid {
		t.Errorf("the spool's lock file belongs to uid %d, not the pod's %d", owner, uid)
	}

	// The image's HEALTHCHECK, run as Docker would: as the image's user, with its environment.
	if hc := img.healthcheck; len(hc) > 0 {
		u := healthcheckURL(hc)
		if u == nil || u.Port() != strconv.Itoa(port) {
			t.Errorf("the HEALTHCHECK %q does not call the container port %d", hc, port)
		} else {
			args := slices.Clone(hc[1:])
			for i, a := range args {
				args[i] = strings.ReplaceAll(a, u.Host, addr)
			}
			hcEnv := maps.Clone(childEnv)
			hcEnv["HOME"] = filepath.Join(root, dockerHome)
			cmd := exec.Command(filepath.Join(bins, path.Base(hc[0])), args...)
			cmd.Dir, cmd.Env = root, envList(hcEnv)
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("the HEALTHCHECK %q against a healthy broker: %v\n%s", hc, err, out)
			}
			t.Logf("the HEALTHCHECK, as uid %d: %s", cmdUID(cred), bytes.TrimSpace(out))
		}
	}

	grace := 30 * time.Second
	if g := pod.TerminationGracePeriodSeconds; g != nil {
		grace = time.Duration(*g) * time.Second
	}
	b.stop(t, grace)
}

// broker is a running queen binary.
type broker struct {
	cmd  *exec.Cmd
	log  *testkit.LogBuffer
	done chan struct{} // closed when it exited; then err is its Wait error
	err  error
}

// startBroker starts the queen binary in dir with exactly env (nothing of the test's own
// environment: the host's DATABASE_URL or PG_* would change what runs), as cred when set.
func startBroker(t *testing.T, bin, dir string, env map[string]string, cred *syscall.Credential) *broker {
	t.Helper()
	b := &broker{log: &testkit.LogBuffer{}, done: make(chan struct{})}
	b.cmd = exec.Command(bin)
	b.cmd.Dir, b.cmd.Env = dir, envList(env)
	b.cmd.Stdout, b.cmd.Stderr = b.log, b.log
	if cred != nil {
		b.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	if err := b.cmd.Start(); err != nil {
		if cred != nil && errors.Is(err, syscall.EPERM) {
			t.Skipf("cannot run the broker as the manifest's uid %d (%v): running as root, the permission bits would not stop its writes", cred.Uid, err)
		}
		t.Fatalf("start %s: %v", bin, err)
	}
	go func() {
		b.err = b.cmd.Wait()
		close(b.done)
	}()
	t.Cleanup(func() {
		select {
		case <-b.done:
		default:
			_ = b.cmd.Process.Kill()
			<-b.done
		}
		if t.Failed() {
			t.Logf("the broker's log:\n%s", b.log)
		}
	})
	return b
}

// waitHealthy waits until GET /health answers 200, failing at once when the broker exits.
func (b *broker) waitHealthy(t *testing.T, base string, total time.Duration) {
	t.Helper()
	deadline := time.Now().Add(total)
	client := &http.Client{Timeout: 5 * time.Second}
	var last string
	for {
		select {
		case <-b.done:
			t.Fatalf("the broker exited (%v) before /health answered (its log follows)", b.err)
		default:
		}
		resp, err := client.Get(base + "/health")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, body)
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			t.Fatalf("/health did not answer 200 within %s: %s", total, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop sends SIGTERM, as the kubelet does, and wants exit status 0 within grace.
func (b *broker) stop(t *testing.T, grace time.Duration) {
	t.Helper()
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.done:
		if b.err != nil {
			t.Errorf("after SIGTERM the broker exited with %v", b.err)
		}
	case <-time.After(grace):
		t.Errorf("the broker did not stop within the grace period of %s", grace)
	}
}

// cmdUID is the user a child started with cred runs as.
func cmdUID(cred *syscall.Credential) int {
	if cred == nil {
		return os.Geteuid()
	}
	return int(cred.Uid)
}

// buildBinaries builds queen and queenctl (the image's two commands) into a directory the
// manifest's user can read, and returns it.
func buildBinaries(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	openUp(t, dir)
	cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "./cmd/queen", "./cmd/queenctl")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return dir
}

// openUp lets other users pass through dir and its parent (t.TempDir makes both 0700), so that
// a broker running as the manifest's user reaches what is inside.
func openUp(t *testing.T, dir string) {
	t.Helper()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

// freeAddr is a loopback address no one listens on (a moment ago).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func httpDo(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func envList(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// resolveEnv is the container's environment as the kubelet builds it: the image's ENV, then
// the manifest's env over it, with the values the cluster supplies replaced by the test's.
func resolveEnv(t *testing.T, img dockerImage, c container) map[string]string {
	t.Helper()
	env := maps.Clone(img.env)
	if len(c.EnvFrom) > 0 {
		t.Errorf("envFrom is not understood by this test; name each variable in env")
	}
	for _, e := range c.Env {
		switch vf := e.ValueFrom; {
		case vf == nil:
			if strings.Contains(e.Value, "$(") {
				t.Errorf("%s: $(VAR) references are not understood by this test", e.Name)
			}
			env[e.Name] = e.Value
		case vf.SecretKeyRef != nil && e.Name == "DATABASE_URL":
			env[e.Name] = testDSN // the Secret queen-db of the deploy instructions
		case vf.FieldRef != nil && vf.FieldRef.FieldPath == "metadata.name":
			env[e.Name] = podName
		default:
			t.Errorf("%s: a valueFrom this test cannot supply: %+v", e.Name, *vf)
		}
	}
	if env["DATABASE_URL"] == "" {
		t.Error("the manifest sets no DATABASE_URL; the image has no PostgreSQL to embed")
	}
	return env
}

// workload is the part of a Deployment or StatefulSet the test reads.
type workload struct {
	Kind string `json:"kind"`
	Spec struct {
		Template struct {
			Spec podSpec `json:"spec"`
		} `json:"template"`
		VolumeClaimTemplates []struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		} `json:"volumeClaimTemplates"`
	} `json:"spec"`
}

type podSpec struct {
	TerminationGracePeriodSeconds *int64           `json:"terminationGracePeriodSeconds"`
	SecurityContext               *securityContext `json:"securityContext"`
	Volumes                       []struct {
		Name                  string          `json:"name"`
		EmptyDir              json.RawMessage `json:"emptyDir"`
		PersistentVolumeClaim json.RawMessage `json:"persistentVolumeClaim"`
	} `json:"volumes"`
	Containers []container `json:"containers"`
}

// securityContext holds the fields of a pod's and a container's security contexts the test
// reads (fsGroup exists only on the pod's, readOnlyRootFilesystem only on the container's).
type securityContext struct {
	RunAsUser              *int64 `json:"runAsUser"`
	RunAsGroup             *int64 `json:"runAsGroup"`
	FSGroup                *int64 `json:"fsGroup"`
	ReadOnlyRootFilesystem *bool  `json:"readOnlyRootFilesystem"`
}

// over is the container's security context with the pod's filling what it leaves unset, as
// the kubelet applies them.
func (c *securityContext) over(pod *securityContext) securityContext {
	var out securityContext
	if pod != nil {
		out = *pod
	}
	if c != nil {
		if c.RunAsUser != nil {
			out.RunAsUser = c.RunAsUser
		}
		if c.RunAsGroup != nil {
			out.RunAsGroup = c.RunAsGroup
		}
		out.ReadOnlyRootFilesystem = c.ReadOnlyRootFilesystem
	}
	return out
}

type container struct {
	Name  string `json:"name"`
	Ports []struct {
		Name          string `json:"name"`
		ContainerPort int    `json:"containerPort"`
	} `json:"ports"`
	Env []struct {
		Name      string `json:"name"`
		Value     string `json:"value"`
		ValueFrom *struct {
			SecretKeyRef *struct{ Name, Key string } `json:"secretKeyRef"`
			FieldRef     *struct {
				FieldPath string `json:"fieldPath"`
			} `json:"fieldRef"`
			ConfigMapKeyRef json.RawMessage `json:"configMapKeyRef"`
		} `json:"valueFrom"`
	} `json:"env"`
	EnvFrom         []json.RawMessage `json:"envFrom"`
	VolumeMounts    []volumeMount     `json:"volumeMounts"`
	ReadinessProbe  *probe            `json:"readinessProbe"`
	LivenessProbe   *probe            `json:"livenessProbe"`
	SecurityContext *securityContext  `json:"securityContext"`
}

type volumeMount struct {
	Name      string `json:"name"`
	MountPath string `json:"mountPath"`
	SubPath   string `json:"subPath"`
	ReadOnly  bool   `json:"readOnly"`
}

type probe struct {
	HTTPGet *struct {
		Path string `json:"path"`
		Port any    `json:"port"` // a number or a port's name
	} `json:"httpGet"`
}

// containerPort resolves a probe's port (a number or a name; nil or "": the first port).
func (c container) containerPort(t *testing.T, port any) int {
	t.Helper()
	if len(c.Ports) == 0 {
		t.Fatal("the container declares no port")
	}
	switch p := port.(type) {
	case nil:
		return c.Ports[0].ContainerPort
	case float64:
		return int(p)
	case string:
		if p == "" {
			return c.Ports[0].ContainerPort
		}
		for _, cp := range c.Ports {
			if cp.Name == p {
				return cp.ContainerPort
			}
		}
	}
	t.Errorf("port %v names no port of the container", port)
	return -1
}

// mountOf is the mount holding dir (the deepest one), or nil.
func (c container) mountOf(dir string) *volumeMount {
	var best *volumeMount
	for i, m := range c.VolumeMounts {
		if under(dir, m.MountPath) && (best == nil || len(m.MountPath) > len(best.MountPath)) {
			best = &c.VolumeMounts[i]
		}
	}
	return best
}

// writableVolume says whether the volume name is one the broker can write: an emptyDir, a
// persistentVolumeClaim, or a StatefulSet's volumeClaimTemplate (a configMap or secret is
// read-only).
func (w workload) writableVolume(name string) bool {
	for _, v := range w.Spec.Template.Spec.Volumes {
		if v.Name == name {
			return v.EmptyDir != nil || v.PersistentVolumeClaim != nil
		}
	}
	for _, v := range w.Spec.VolumeClaimTemplates {
		if v.Metadata.Name == name {
			return true
		}
	}
	return false
}

// under says whether p is dir or lies beneath it (both absolute, slash-separated).
func under(p, dir string) bool {
	if !path.IsAbs(p) || !path.IsAbs(dir) {
		return false
	}
	rel, err := filepath.Rel(path.Clean(dir), path.Clean(p))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// readWorkloads returns the Deployments and StatefulSets of a multi-document manifest.
func readWorkloads(t *testing.T, file string) []workload {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []workload
	for i, doc := range splitDocuments(b) {
		var w workload
		if err := yaml.Unmarshal(doc, &w); err != nil {
			t.Fatalf("%s, document %d: %v", file, i+1, err)
		}
		if w.Kind == "Deployment" || w.Kind == "StatefulSet" {
			out = append(out, w)
		}
	}
	return out
}

// splitDocuments splits a YAML stream at its "---" lines; sigs.k8s.io/yaml reads one document.
func splitDocuments(b []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	flush := func() {
		if len(bytes.TrimSpace(cur.Bytes())) > 0 {
			docs = append(docs, slices.Clone(cur.Bytes()))
		}
		cur.Reset()
	}
	for line := range bytes.Lines(b) {
		if strings.TrimRight(string(line), " \r\n") == "---" {
			flush()
			continue
		}
		cur.Write(line)
	}
	flush()
	return docs
}

// dockerImage is what the Dockerfile's last stage (the image) declares.
type dockerImage struct {
	env         map[string]string
	workdir     string
	user        string
	volumes     []string
	expose      []string // port numbers
	copies      []dockerCopy
	healthcheck []string // the exec form's command; nil when there is none
}

// dockerCopy is one COPY of the image stage.
type dockerCopy struct {
	chown string
	srcs  []string
	dest  string
}

// volumeOf is the VOLUME holding p, or "".
func (img dockerImage) volumeOf(p string) string {
	for _, v := range img.volumes {
		if under(p, v) {
			return v
		}
	}
	return ""
}

// has says whether a COPY puts the file p into the image.
func (img dockerImage) has(p string) bool {
	for _, c := range img.copies {
		for _, s := range c.srcs {
			if (strings.HasSuffix(c.dest, "/") && path.Join(c.dest, path.Base(s)) == p) || c.dest == p {
				return true
			}
		}
	}
	return false
}

// healthcheckURL is the broker URL a health check command names, or nil.
func healthcheckURL(cmd []string) *url.URL {
	for _, a := range cmd {
		_, v, _ := strings.Cut(a, "=") // --server=http://…
		if !strings.HasPrefix(v, "http") {
			v = a
		}
		if u, err := url.Parse(v); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Port() != "" {
			return u
		}
	}
	return nil
}

// readDockerfile reads ../Dockerfile's last stage. It knows the instructions the image uses
// and only their simple forms (no quoting, no variables), which is all the Dockerfile needs.
func readDockerfile(t *testing.T) dockerImage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	// Instructions: continuation lines joined, comment lines (inside continuations too) dropped.
	var instrs []string
	var cur strings.Builder
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") || (line == "" && cur.Len() == 0) {
			continue
		}
		if more, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(more + " ")
			continue
		}
		cur.WriteString(line)
		instrs = append(instrs, cur.String())
		cur.Reset()
	}
	last := -1
	for i, in := range instrs {
		if strings.EqualFold(strings.Fields(in)[0], "FROM") {
			last = i
		}
	}
	if last < 0 {
		t.Fatal("the Dockerfile has no FROM")
	}
	img := dockerImage{env: map[string]string{}}
	for _, in := range instrs[last+1:] {
		op, rest, _ := strings.Cut(in, " ")
		rest = strings.TrimSpace(rest)
		f := strings.Fields(rest)
		switch strings.ToUpper(op) {
		case "ENV":
			if !strings.Contains(f[0], "=") { // the legacy form: ENV KEY value
				img.env[f[0]] = strings.TrimSpace(strings.TrimPrefix(rest, f[0]))
				break
			}
			for _, kv := range f {
				k, v, _ := strings.Cut(kv, "=")
				img.env[k] = v
			}
		case "WORKDIR":
			img.workdir = rest
		case "USER":
			img.user = rest
		case "EXPOSE":
			for _, p := range f {
				img.expose = append(img.expose, strings.TrimSuffix(p, "/tcp"))
			}
		case "VOLUME":
			var vs []string
			if err := json.Unmarshal([]byte(rest), &vs); err != nil {
				vs = f
			}
			for _, v := range vs {
				img.volumes = append(img.volumes, path.Clean(v))
			}
		case "COPY":
			var c dockerCopy
			var paths []string
			for _, a := range f {
				if v, ok := strings.CutPrefix(a, "--chown="); ok {
					c.chown = v
				} else if !strings.HasPrefix(a, "--") {
					paths = append(paths, a)
				}
			}
			if len(paths) >= 2 {
				c.srcs, c.dest = paths[:len(paths)-1], paths[len(paths)-1]
				if c.dest != "/" && !strings.HasSuffix(c.dest, "/") {
					c.dest = path.Clean(c.dest)
				}
				img.copies = append(img.copies, c)
			}
		case "HEALTHCHECK":
			_, cmd, ok := strings.Cut(rest, "CMD ")
			if !ok {
				break // HEALTHCHECK NONE
			}
			if err := json.Unmarshal([]byte(strings.TrimSpace(cmd)), &img.healthcheck); err != nil {
				t.Errorf("HEALTHCHECK CMD %s is not the exec form (the image has no shell): %v", cmd, err)
			}
		}
	}
	return img
}
