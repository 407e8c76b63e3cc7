package vfs

import (
	"errors"
	"io/fs"
	"path/filepath"
)

// MkdirAllDurable creates dir and its missing parents (DirPerm) and syncs
// the parent of each directory it created, so that a power cut keeps
// them: MkdirAll's entries are not durable until then.
func MkdirAllDurable(fsys FS, dir string) error {
	var missing []string
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		if _, err := fsys.ReadDir(p); err == nil || !errors.Is(err, fs.ErrNotExist) {
			break
		}
		missing = append(missing, p)
		if filepath.Dir(p) == p {
			break
		}
	}
	if err := fsys.MkdirAll(dir, DirPerm); err != nil {
		return err
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := fsys.SyncDir(filepath.Dir(missing[i])); err != nil {
			return err
		}
	}
	return nil
}
