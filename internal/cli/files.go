package cli

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/multifile"
)

// program is what run's and judge's positional arguments name when they
// name a directory or several files: the files, as a request carries
// them, and the entry.
type program struct {
	files []multifile.File
	entry string
}

// readProgram reads the program of several files that args name: one
// directory (every regular file beneath it, hidden ones and links left
// out) or several files (each at its path when that is relative and
// stays below the current directory, else at its base name). The entry
// is entryFlag, else the first file of several, else the directory's one
// main.<ext> of a known language.
func readProgram(args []string, entryFlag string, langs *lang.Table) (*program, error) {
	p := &program{}
	var err error
	if len(args) == 1 {
		p.files, err = readDir(args[0])
	} else {
		p.files, err = readFiles(args)
	}
	if err != nil {
		return nil, err
	}
	if len(p.files) == 0 {
		return nil, fmt.Errorf("%s holds no file", args[0])
	}
	switch {
	case entryFlag != "":
		p.entry = entryFlag
	case len(args) > 1:
		p.entry = p.files[0].Path
	default:
		var mains []string
		for _, f := range p.files {
			if strings.HasPrefix(f.Path, "main.") && !strings.Contains(f.Path, "/") {
				if _, err := langs.ForFile(f.Path); err == nil {
					mains = append(mains, f.Path)
				}
			}
		}
		if len(mains) != 1 {
			return nil, fmt.Errorf("--entry: name the file to run in %s (found %d main.<ext> files of a known language)", args[0], len(mains))
		}
		p.entry = mains[0]
	}
	if err := multifile.CheckPath(p.entry); err != nil {
		return nil, fmt.Errorf("--entry: %w", err)
	}
	if !slices.ContainsFunc(p.files, func(f multifile.File) bool { return f.Path == p.entry }) {
		return nil, fmt.Errorf("--entry: %q is not among the program's files", p.entry)
	}
	return p, nil
}

// readFiles reads the files named on the command line.
func readFiles(names []string) ([]multifile.File, error) {
	if len(names) > multifile.MaxFiles {
		return nil, fmt.Errorf("%d files, at most %d", len(names), multifile.MaxFiles)
	}
	var out []multifile.File
	for _, name := range names {
		if name == "-" {
			return nil, errors.New("- (the code on stdin) cannot be one of several files")
		}
		rel := filepath.ToSlash(filepath.Clean(name))
		if filepath.IsAbs(name) || multifile.CheckPath(rel) != nil {
			rel = filepath.Base(name)
		}
		f, err := readProgramFile(name, rel)
		if errors.Is(err, fs.ErrNotExist) {
			// run main.py a b: a and b were meant for the program.
			return nil, fmt.Errorf("%w (the program's arguments go after --)", err)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// readDir reads every regular file beneath dir. Hidden files and
// directories (.git) are left out, and so are symbolic links: the
// program gets what the directory holds, never what a link points to.
func readDir(dir string) ([]multifile.File, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	var out []multifile.File
	total := 0
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if strings.HasPrefix(path.Base(rel), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if len(out) == multifile.MaxFiles {
			return fmt.Errorf("%s holds more than %d files", dir, multifile.MaxFiles)
		}
		f, err := readProgramFile(p, rel)
		if err != nil {
			return err
		}
		total += len(f.Content)
		if total > 2*multifile.MaxTotalBytes {
			return fmt.Errorf("%s holds more than %d bytes", dir, multifile.MaxTotalBytes)
		}
		out = append(out, f)
		return nil
	})
	return out, err
}

// readProgramFile reads one file of a program, placed at rel: as text
// when it is UTF-8, else in base64; executable when any execute bit is
// set.
func readProgramFile(name, rel string) (multifile.File, error) {
	b, err := readFileBounded(name, multifile.MaxTotalBytes)
	if err != nil {
		return multifile.File{}, err
	}
	info, err := os.Stat(name)
	if err != nil {
		return multifile.File{}, err
	}
	f := multifile.File{Path: rel, Executable: info.Mode().Perm()&0o111 != 0}
	if utf8.Valid(b) {
		f.Content = string(b)
	} else {
		f.Content, f.Encoding = base64.StdEncoding.EncodeToString(b), multifile.EncodingBase64
	}
	return f, nil
}

// isDir reports whether name is a directory.
func isDir(name string) bool {
	info, err := os.Stat(name)
	return err == nil && info.IsDir()
}
