package watch_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// editor saves a file the way a kind of editor does.
type editor struct {
	name string
	save func(t *testing.T, path string, data []byte)
}

// The ways editors save, as the race test lists them.
var (
	// appendInPlace: `echo ... >> file`; data must extend the file.
	appendInPlace = editor{"append in place", func(t *testing.T, path string, data []byte) {
		t.Helper()
		old := readFile(t, path)
		if !bytes.HasPrefix(data, old) {
			t.Fatalf("append in place: %q does not extend %q", data, old)
		}
		appendBytes(t, path, data[len(old):])
	}}
	// tempRename: write a temporary file beside it, rename it over the file
	// (VS Code, JetBrains, most libraries' atomic writes).
	tempRename = editor{"temp file + rename", func(t *testing.T, path string, data []byte) {
		t.Helper()
		tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp1234")
		writeNew(t, tmp, data)
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}}
	// vim: probe the folder with a file named 4913, rename the file to a
	// backup, write the new file, delete the backup.
	vim = editor{"vim", func(t *testing.T, path string, data []byte) {
		t.Helper()
		vimSave(t, path, data, 0)
	}}
	// truncate: open with O_TRUNC and write (nano, `cat > file`).
	truncate = editor{"truncate + write", func(t *testing.T, path string, data []byte) {
		t.Helper()
		truncateWrite(t, path, data, 0)
	}}
	// The same, with a pause between the steps longer than the debounce.
	slowVim = editor{"slow vim", func(t *testing.T, path string, data []byte) {
		t.Helper()
		vimSave(t, path, data, 300*time.Millisecond)
	}}
	slowTruncate = editor{"slow truncate + write", func(t *testing.T, path string, data []byte) {
		t.Helper()
		truncateWrite(t, path, data, 300*time.Millisecond)
	}}
)

var editors = []editor{appendInPlace, tempRename, vim, truncate}

func writeNew(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func vimSave(t *testing.T, path string, data []byte, pause time.Duration) {
	t.Helper()
	probe := filepath.Join(filepath.Dir(path), "4913")
	writeNew(t, probe, nil)
	if err := os.Remove(probe); err != nil {
		t.Fatal(err)
	}
	backup := path + "~"
	if err := os.Rename(path, backup); err != nil {
		t.Fatal(err)
	}
	time.Sleep(pause)
	writeNew(t, path, data)
	if err := os.Remove(backup); err != nil {
		t.Fatal(err)
	}
}

func truncateWrite(t *testing.T, path string, data []byte, pause time.Duration) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(pause)
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// appendBytes appends to a file as `>>` does.
func appendBytes(t *testing.T, path string, data []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
