package embeddedpg

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServerDiesWithParent checks that a server outlives no broker that was killed without
// stopping it: a helper process starts one and is then killed with SIGKILL.
func TestServerDiesWithParent(t *testing.T) {
	if dir := os.Getenv("EMBEDDEDPG_HELPER_DATA_DIR"); dir != "" {
		s, err := Start(context.Background(), Options{DataDir: dir})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println(s.proc.Pid)
		time.Sleep(time.Minute) // a child process that waits to be killed
		return
	}
	binDir(t) // skips without binaries
	helper := exec.Command(os.Args[0], "-test.run=^TestServerDiesWithParent$")
	helper.Env = append(os.Environ(), "EMBEDDEDPG_HELPER_DATA_DIR="+newDataDir(t))
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		_ = helper.Process.Kill()
		_ = helper.Wait()
		t.Fatalf("helper: %q", line)
	}
	_ = helper.Process.Kill()
	_ = helper.Wait()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) { // a bounded wait
		if !running(pid) {
			return
		}
	}
	_ = syscall.Kill(pid, syscall.SIGQUIT)
	t.Fatalf("postmaster %d still runs after its parent died", pid)
}

// running reports whether pid runs; a zombie waiting for init to reap it has exited.
func running(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, afterName, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(afterName, "Z") && !strings.HasPrefix(afterName, "X")
}
