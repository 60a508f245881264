package readbuf

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	large := filepath.Join(dir, "large")
	empty := filepath.Join(dir, "empty")
	big := bytes.Repeat([]byte("0123456789"), 100_000)
	for path, data := range map[string][]byte{small: []byte("hello\n"), large: big, empty: nil} {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 0, 16)
	for _, c := range []struct {
		path string
		want []byte
	}{{small, []byte("hello\n")}, {large, big}, {small, []byte("hello\n")}, {empty, nil}, {large, big}} {
		got, err := ReadFile(buf, c.path)
		if err != nil {
			t.Fatalf("ReadFile(%s): %v", c.path, err)
		}
		if !bytes.Equal(got, c.want) {
			t.Fatalf("ReadFile(%s): got %d bytes, want %d", c.path, len(got), len(c.want))
		}
		buf = got
	}
	if cap(buf) < len(big) {
		t.Errorf("the buffer was not kept: cap %d", cap(buf))
	}
	// Read into a buffer with room, the path's C string is the one
	// allocation: no *os.File, no FileInfo.
	if n := testing.AllocsPerRun(10, func() { buf, _ = ReadFile(buf, large) }); n > 1 {
		t.Errorf("ReadFile into a large enough buffer: %v allocations, want at most 1", n)
	}
	if _, err := ReadFile(buf, filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile of a missing file: %v, want fs.ErrNotExist", err)
	}
	var pe *fs.PathError
	if _, err := ReadFile(nil, dir); !errors.As(err, &pe) {
		t.Errorf("ReadFile of a directory: %v, want a *fs.PathError", err)
	}
}

// TestReadFileGrows reads a file that grows between the size the buffer was
// made for and the read: /proc files report a size of 0.
func TestReadFileGrows(t *testing.T) {
	got, err := ReadFile(nil, "/proc/self/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	if !bytes.Contains(got, []byte("Pid:")) {
		t.Errorf("ReadFile(/proc/self/status) = %q", got)
	}
}

// TestOpen: Open reads a file as os.Open's file does, and fails as os.Open
// fails.
func TestOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prd.json")
	if err := os.WriteFile(path, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got, err := io.ReadAll(f); err != nil || string(got) != "{}\n" {
		t.Errorf("read %q, %v", got, err)
	}
	if f.Name() != path {
		t.Errorf("Name() = %q, want %q", f.Name(), path)
	}
	_, err = Open(path + ".missing")
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Op != "open" || pe.Path != path+".missing" || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open of a missing file = %v, want os.Open's *fs.PathError", err)
	}
}

// TestReadFileHalves reads a file large enough to be read in two halves at
// once into fresh memory, and one that is shorter than the size the halves
// were cut for: it is read again from its start.
func TestReadFileHalves(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	var data []byte
	for i := 0; len(data) < 3*halvesMin; i++ {
		data = strconv.AppendInt(data, int64(i), 10)
		data = append(data, '\n')
	}
	path := filepath.Join(t.TempDir(), "prd.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(nil, path)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("ReadFile: %d bytes, %v; want %d bytes", len(got), err, len(data))
	}

	fd, err := open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	buf := make([]byte, 0, len(data)+100)
	if got := readHalves(fd, buf, len(data)+100); len(got) != 0 {
		t.Errorf("readHalves of a file shorter than the size: %d bytes, want none", len(got))
	}
	if off, err := syscall.Seek(fd, 0, io.SeekCurrent); off != 0 || err != nil {
		t.Errorf("readHalves moved the offset to %d (%v)", off, err)
	}
	if got := readHalves(fd, buf, len(data)); !bytes.Equal(got, data) {
		t.Errorf("readHalves: %d bytes, want the file's %d", len(got), len(data))
	}
	if off, err := syscall.Seek(fd, 0, io.SeekCurrent); off != int64(len(data)) || err != nil {
		t.Errorf("readHalves left the offset at %d (%v), want %d", off, err, len(data))
	}
}

// TestReadEach: a file is handed over whole, piece by piece, however its
// size falls against the buffer's, and its size is told; one that is not
// there is an error that names it.
func TestReadEach(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []int{0, 1, 32<<10 - 1, 32 << 10, 100<<10 + 7} {
		path := filepath.Join(dir, "f")
		want := bytes.Repeat([]byte("0123456789abcdef"), n/16+1)[:n]
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		var got []byte
		size, err := ReadEach(path, func(p []byte) { got = append(got, p...) })
		if err != nil || size != int64(n) || !bytes.Equal(got, want) {
			t.Errorf("ReadEach of %d bytes: %d bytes told, %d handed over (%v), want all of them", n, size, len(got), err)
		}
	}
	missing := filepath.Join(dir, "missing")
	if _, err := ReadEach(missing, func([]byte) {}); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("ReadEach of a missing file: %v, want an error naming it", err)
	}
}
