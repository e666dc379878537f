package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ptxgen/ptxgen/gogen"
)

// How gen writes its files: each changed one goes in full to a new temporary file
// beside it, created with O_EXCL and O_NOFOLLOW (so nothing that appears at that
// name, a symbolic link included, is ever opened) and synced; only when every one is
// written are they renamed over their names. A rename replaces whatever is at the
// name, a link planted there between gen's checks and its write included, without
// following it; a reader sees the old file or the new one, never a part; and a run that
// fails before the renames (a full disk, a kill) leaves the previous files as they
// were, with at most a temporary file behind when killed.

// syncFile flushes a temporary file to the disk before it is renamed over its name, so
// a crash cannot leave a name holding a file whose data never arrived.
var syncFile = (*os.File).Sync

// tempPrefix starts every temporary file's name: a dot, which the go command ignores.
const tempPrefix = ".ptxgen-"

// writeFiles writes files (names relative to dir) as described above, in their order,
// leaving those that already hold their data untouched (so an up-to-date package keeps
// its modification times and is not rebuilt).
func writeFiles(dir string, files []gogen.File) error {
	type pending struct{ tmp, name string }
	var written []pending
	cleanUp := func() {
		for _, p := range written {
			os.Remove(p.tmp)
		}
	}
	for _, f := range files {
		name := filepath.Join(dir, f.Name)
		if holds(name, f.Data) {
			continue
		}
		tmp, err := writeTemp(dir, f.Name, f.Data)
		if err != nil {
			cleanUp()
			return fmt.Errorf("writing %s: %w", name, err)
		}
		written = append(written, pending{tmp, name})
	}
	for i, p := range written {
		if err := os.Rename(p.tmp, p.name); err != nil {
			for _, q := range written[i:] {
				os.Remove(q.tmp)
			}
			return fmt.Errorf("writing %s: %w", p.name, err)
		}
	}
	if len(written) > 0 {
		syncDir(dir)
	}
	return nil
}

// holds reports whether name is a regular file holding exactly data. It opens name
// with O_NOFOLLOW and reads at most one byte more than data, so a link, a FIFO or a
// device there is neither followed nor read without end.
func holds(name string, data []byte) bool {
	f, err := os.OpenFile(name, os.O_RDONLY|oNoFollow|oNonBlock, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || fi.Size() != int64(len(data)) {
		return false
	}
	old, err := io.ReadAll(io.LimitReader(f, int64(len(data))+1))
	return err == nil && bytes.Equal(old, data)
}

// writeTemp writes data to a new file in dir whose name begins with tempPrefix and
// base, syncs it and returns its path; on an error it leaves no file.
func writeTemp(dir, base string, data []byte) (string, error) {
	for range 100 {
		path := filepath.Join(dir, fmt.Sprintf("%s%s.%08x.tmp", tempPrefix, base, rand.Uint32()))
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|oNoFollow, 0o644)
		if errors.Is(err, os.ErrExist) {
			continue // another name
		}
		if err != nil {
			return "", err
		}
		_, err = f.Write(data)
		if err == nil {
			err = syncFile(f)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
			return "", err
		}
		return path, nil
	}
	return "", fmt.Errorf("no free temporary name in %s", dir)
}

// syncDir flushes dir's entries, so that the renames survive a crash. Not every
// file system can sync a directory; the files are written either way.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// fileUser is a file ptxgen wrote that uses PTX files: a launcher embeds them, a
// manifest names them.
type fileUser struct {
	name string   // base name, in the folder of the PTX files
	what string   // "a launcher ptxgen wrote"
	uses []string // the PTX files' base names
}

// checkOtherUsers refuses a run that would change or remove PTX files that another
// file in dir uses, one this run does not rewrite: a launcher (the PTX files of Go
// file X.go are X_TARGET.ptx) or a manifest (its targets' "ptx"). Rewriting them would
// leave that file embedding or describing kernels it was not generated with, or missing.
// files are the run's files, stale the PTX files it would remove; blame names the flag
// whose value chose the PTX files' names.
func checkOtherUsers(dir, ptxBase string, files []gogen.File, stale []string, blame func(want string) error) error {
	writes := map[string]bool{}
	var touched []string
	for _, f := range files {
		writes[f.Name] = true
		if strings.HasSuffix(f.Name, ".ptx") && !holds(filepath.Join(dir, f.Name), f.Data) {
			touched = append(touched, f.Name)
		}
	}
	touched = append(touched, stale...)
	if len(touched) == 0 {
		return nil
	}
	for _, u := range otherUsers(dir, ptxBase, writes) {
		var hit []string
		for _, p := range touched {
			if slices.Contains(u.uses, p) {
				hit = append(hit, p)
			}
		}
		if len(hit) == 0 {
			continue
		}
		slices.Sort(hit)
		flag := "-o"
		if strings.HasSuffix(u.name, ".json") {
			flag = "-manifest"
		}
		return blame(fmt.Sprintf("PTX file names no other file uses: %s (%s) uses %s, which this run would change or remove; give %s %s as well to regenerate both (or choose another name)",
			filepath.Join(dir, u.name), u.what, strings.Join(hit, ", "), flag, filepath.Join(dir, u.name)))
	}
	return nil
}

// otherUsers lists the files in dir that ptxgen wrote and that use PTX files, except
// those in skip: the launcher named after ptxBase and every launch manifest.
func otherUsers(dir, ptxBase string, skip map[string]bool) []fileUser {
	var users []fileUser
	if !skip[ptxBase] {
		if data, ok := readOwn(filepath.Join(dir, ptxBase), goHeader); ok {
			u := fileUser{name: ptxBase, what: "a launcher ptxgen wrote"}
			for _, line := range strings.Split(string(data), "\n") {
				if name, ok := strings.CutPrefix(line, "//go:embed "); ok {
					u.uses = append(u.uses, strings.TrimSpace(name))
				}
			}
			users = append(users, u)
		}
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if skip[e.Name()] || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		data, ok := readOwn(filepath.Join(dir, e.Name()), manifestHeader)
		if !ok {
			continue
		}
		var m struct {
			Targets []struct {
				PTX string `json:"ptx"`
			} `json:"targets"`
		}
		if json.Unmarshal(data, &m) != nil {
			continue
		}
		u := fileUser{name: e.Name(), what: "a launch manifest ptxgen wrote"}
		for _, t := range m.Targets {
			u.uses = append(u.uses, t.PTX)
		}
		users = append(users, u)
	}
	return users
}

// maxUserBytes bounds what otherUsers reads of one file (the default decode's
// launcher is about 100 KB).
const maxUserBytes = 64 << 20

// readOwn reads a regular file (not through a link) that begins with header.
func readOwn(path, header string) ([]byte, bool) {
	f, err := os.OpenFile(path, os.O_RDONLY|oNoFollow|oNonBlock, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, false
	}
	data, err := io.ReadAll(io.LimitReader(f, maxUserBytes))
	if err != nil || !bytes.HasPrefix(data, []byte(header)) {
		return nil, false
	}
	return data, true
}
