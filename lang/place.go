package lang

import (
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/coderunner/coderunner/multifile"
	"github.com/coderunner/coderunner/sandbox"
)

// Placement is a program placed in the workspace for its language: the
// files written before the build, the entry, and what the compile
// template's placeholders stand for.
type Placement struct {
	multifile.Layout
	// Class is the Java class the program runs as, qualified with the
	// entry's package; empty for a language without {class}.
	Class string
	// Sources are the workspace paths compiled together ({sources}), the
	// entry first; nil for an interpreted language.
	Sources []string
	// Project tells that the workspace holds the recipe's ProjectFile, so
	// the build uses ProjectCompile.
	Project bool
}

// Vars returns the placeholders' values for the placement, in the
// sandbox directory dir (the workspace, or where a cached program is).
func (p *Placement) Vars(dir string) Vars {
	v := Vars{Source: path.Join(dir, p.Entry), Class: p.Class, Project: p.Project}
	for _, s := range p.Sources {
		v.Sources = append(v.Sources, path.Join(dir, s))
	}
	return v
}

// Reserved returns the workspace paths the language's build writes
// itself, which no file of a request may take: the compiled program.
func (l *Language) Reserved() map[string]string {
	r := map[string]string{}
	if l.Compiled && slices.ContainsFunc(slices.Concat(l.Compile, l.ProjectCompile, l.Run), func(a string) bool {
		return strings.Contains(a, "{binary}")
	}) {
		r[DefaultBinary] = "where the compiled program is written"
	}
	return r
}

// Place lays src out for the language: its code under SourceName, its
// files, the entry (the code's file unless src names another), the Java
// class from the entry, and the sources a compiled language compiles
// together: the entry, then every other file the recipe's Sources
// patterns match, in path order. reserved adds to Reserved the paths the
// caller writes itself. An error is a *multifile.Error naming the field
// at fault.
func (l *Language) Place(src multifile.Source, reserved map[string]string) (*Placement, error) {
	res := l.Reserved()
	for k, v := range reserved {
		res[k] = v
	}
	lay, err := multifile.Resolve(src, l.SourceName(src.Code), res)
	if err != nil {
		return nil, err
	}
	p := &Placement{Layout: *lay}
	if l.NeedsClass() {
		p.Class = JavaMainClass(string(lay.EntryContent))
	}
	if !l.Compiled {
		return p, nil
	}
	if l.ProjectFile != "" {
		p.Project = slices.ContainsFunc(lay.Files, func(f sandbox.File) bool { return f.Path == l.ProjectFile })
	}
	p.Sources = []string{lay.Entry}
	if len(l.Sources) == 0 {
		return p, nil
	}
	if !l.IsSource(lay.Entry) {
		return nil, &multifile.Error{Field: "entry", Reason: "\"" + lay.Entry + "\" is not a " + l.ID +
			" source file (" + strings.Join(l.Sources, ", ") + ")"}
	}
	var more []string
	for _, f := range lay.Files {
		if f.Path != lay.Entry && l.IsSource(f.Path) {
			more = append(more, f.Path)
		}
	}
	slices.Sort(more)
	p.Sources = append(p.Sources, more...)
	return p, nil
}

// IsSource reports whether the workspace path rel matches one of the
// language's Sources patterns.
func (l *Language) IsSource(rel string) bool {
	for _, pat := range l.Sources {
		if deep, ok := strings.CutPrefix(pat, "**/"); ok {
			if m, _ := path.Match(deep, path.Base(rel)); m {
				return true
			}
			continue
		}
		if m, _ := path.Match(pat, rel); m && !strings.Contains(rel, "/") {
			return true
		}
	}
	return false
}

// javaPackage is a package declaration in blanked Java code.
var javaPackage = regexp.MustCompile(`^\s*package\s+([\p{L}_$][\p{L}\p{N}_$]*(?:\s*\.\s*[\p{L}_$][\p{L}\p{N}_$]*)*)\s*;`)

// JavaMainClass is JavaClass qualified with the code's package, when it
// declares one ("app.Main" for "package app; public class Main").
func JavaMainClass(code string) string {
	class := JavaClass(code)
	src := blankJava(code)
	// Annotations may precede the package declaration only in
	// package-info.java, which declares no class: the declaration is the
	// first thing in a compilation unit.
	if m := javaPackage.FindStringSubmatch(src); m != nil {
		pkg := strings.Join(strings.Fields(strings.ReplaceAll(m[1], ".", " ")), ".")
		return pkg + "." + class
	}
	return class
}
