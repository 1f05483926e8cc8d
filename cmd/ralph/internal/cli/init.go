package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ralph-dev/ralph/mdstate"
)

// NewCmdInit builds `ralph init`.
func NewCmdInit(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "init",
		Short: "Create the state files that are missing",
		Long: `Create the five state files (AGENT.md, RALPH_GOALS.md, RALPH_TASKS.md,
RALPH_PROGRESS.md, RALPH_TODO.md) from short templates that explain
themselves. Files that exist are never touched. Adds ralph's runtime folder
.ralph/ (locks, logs, backups) to .gitignore.

The project root is the nearest folder holding RALPH_TASKS.md, else the
root of the git work tree, else the current folder.`,
		Example: "  ralph init\n  ralph -C ~/src/myproject init",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			p, _ := f.Project()
			return runInit(f, p)
		},
	}
}

func runInit(f *Factory, p *mdstate.Project) error {
	if fi, err := os.Stat(p.Root); err != nil || !fi.IsDir() {
		return fmt.Errorf("%s is not a folder ralph can use", p.Root)
	}
	// A folder in a file's place stops init before it creates anything, so
	// that running it again after moving the folder gives the usual result.
	for _, name := range mdstate.Files {
		if fi, err := os.Lstat(p.Path(name)); err == nil && fi.IsDir() {
			return fmt.Errorf("create %s: it is a directory; move it out of the way and run `ralph init` again", name)
		}
	}
	created := 0
	for _, name := range mdstate.Files {
		ok, err := createNew(p.Path(name), []byte(mdstate.Templates[name]))
		switch {
		case err != nil:
			return fmt.Errorf("create %s: %w", name, err)
		case ok:
			created++
			fmt.Fprintf(f.IO.Out, "created %s\n", name)
		default:
			fmt.Fprintf(f.IO.Out, "kept    %s (it exists)\n", name)
		}
	}
	if err := os.MkdirAll(filepath.Join(p.Root, mdstate.RuntimeDir), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", mdstate.RuntimeDir, err)
	}
	added, err := ignoreRuntimeDir(p.Root)
	if err != nil {
		return err
	}
	if added {
		fmt.Fprintf(f.IO.Out, "added   %s/ to .gitignore\n", mdstate.RuntimeDir)
	}
	if created > 0 {
		fmt.Fprintf(f.IO.ErrOut, "\nralph is set up in %s.\nNext: add a task with `ralph task add \"Write the docs\"`, or write \"- [ ] Write the docs\" in RALPH_TASKS.md.\n", p.Root)
	}
	return nil
}

// createNew writes a file that must not exist yet, durably: the temporary
// file is hard-linked into place, which fails if anything is already there,
// so a file created meanwhile is never overwritten.
func createNew(path string, data []byte) (bool, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.IsDir() {
			return false, fmt.Errorf("it is a directory; move it out of the way and run `ralph init` again")
		}
		return false, nil
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, ".ralph-init-*")
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return false, err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return false, err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return false, err
	}
	if err := tmp.Close(); err != nil {
		return false, err
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return false, nil
		}
		return false, err
	}
	d, err := os.Open(dir)
	if err == nil {
		_ = d.Sync()
		d.Close()
	}
	return true, nil
}

// ignoreRuntimeDir adds ".ralph/" to the root's .gitignore unless a line
// already ignores it. The rest of the file is kept byte for byte.
func ignoreRuntimeDir(root string) (bool, error) {
	path := filepath.Join(root, ".gitignore")
	data, err := os.ReadFile(path)
	mode := fs.FileMode(0o644)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return false, fmt.Errorf("read .gitignore: %w", err)
	default:
		if fi, err := os.Stat(path); err == nil {
			mode = fi.Mode()
		}
	}
	for _, line := range strings.Split(string(data), "\n") {
		switch strings.TrimSpace(line) {
		case ".ralph", ".ralph/", "/.ralph", "/.ralph/", ".ralph/*", "/.ralph/*":
			return false, nil
		}
	}
	eol := "\n"
	if bytes.Contains(data, []byte("\r\n")) {
		eol = "\r\n"
	}
	out := append([]byte(nil), data...)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, eol...)
	}
	out = append(out, "# ralph's runtime folder: locks, logs, backups (not state)"+eol+".ralph/"+eol...)
	if err := mdstate.WriteFileAtomic(path, out, mode); err != nil {
		return false, fmt.Errorf("write .gitignore: %w", err)
	}
	return true, nil
}
