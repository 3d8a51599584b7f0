package lang

import (
	"bytes"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

//go:embed recipes.yaml
var embeddedRecipes []byte

// recipeFile is the layout of recipes.yaml.
type recipeFile struct {
	BaseMounts []string          `yaml:"base_mounts"`
	Languages  map[string]Recipe `yaml:"languages"`
}

// Table is the set of languages, looked up by id, alias or extension. It
// is safe for concurrent use.
type Table struct {
	byID   map[string]*Language
	byName map[string]*Language // ids and aliases
	byExt  map[string]*Language
	sorted []*Language
}

var defaultTable = sync.OnceValue(func() *Table {
	t, err := New(nil)
	if err != nil {
		// The embedded recipes are tested; this is a build defect.
		panic("lang: embedded recipes: " + err.Error())
	}
	return t
})

// Default returns the table of the embedded recipes. It is shared, so its
// languages' discovery runs once per process.
func Default() *Table { return defaultTable() }

// parseEmbedded decodes recipes.yaml once; New copies what it uses.
var parseEmbedded = sync.OnceValues(func() (recipeFile, error) { return parseRecipeFile(embeddedRecipes) })

// parseRecipeFile decodes the layout of recipes.yaml; unknown fields are
// errors.
func parseRecipeFile(b []byte) (recipeFile, error) {
	var f recipeFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return f, fmt.Errorf("%w: recipes.yaml: %w", ErrInvalidRecipe, err)
	}
	return f, nil
}

// New builds a table from the embedded recipes and overrides, which
// replace the fields they set of the recipe with the same id or add a
// language. Every resulting recipe is validated; the error names the
// field, as languages.<id>.<field>.
func New(overrides map[string]Recipe) (*Table, error) {
	f, err := parseEmbedded()
	if err != nil {
		return nil, err
	}
	merged := make(map[string]Recipe, len(f.Languages)+len(overrides))
	for id, r := range f.Languages {
		merged[id] = r
	}
	for key, o := range overrides {
		id := strings.ToLower(key)
		if base, ok := merged[id]; ok {
			merged[id] = merge(base, o)
			continue
		}
		for other, r := range f.Languages {
			for _, a := range r.Aliases {
				if strings.ToLower(a) == id {
					return nil, fmt.Errorf("%w: languages.%s: %q is an alias of %s; override %s instead", ErrInvalidRecipe, key, key, other, other)
				}
			}
		}
		merged[id] = merge(Recipe{}, o)
	}
	t := &Table{
		byID:   map[string]*Language{},
		byName: map[string]*Language{},
		byExt:  map[string]*Language{},
	}
	ids := make([]string, 0, len(merged))
	for id := range merged {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		r := merged[id]
		if err := r.validate(id); err != nil {
			return nil, err
		}
		l, err := newLanguage(id, r, f.BaseMounts)
		if err != nil {
			return nil, err
		}
		l.getenv = os.Getenv
		t.byID[id] = l
		t.sorted = append(t.sorted, l)
	}
	// Ids first, so that an alias colliding with an id is reported as the
	// alias's fault.
	for _, l := range t.sorted {
		t.byName[l.ID] = l
	}
	for _, l := range t.sorted {
		if err := index(t.byName, l, "aliases", l.Aliases, "already names"); err != nil {
			return nil, err
		}
		if err := index(t.byExt, l, "extensions", l.Extensions, "is already used by"); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// index maps each of keys, the list field of l's recipe, to l in m. A key
// that already maps to another language is an error, worded with clash.
func index(m map[string]*Language, l *Language, field string, keys []string, clash string) error {
	for i, k := range keys {
		if other, ok := m[k]; ok && other != l {
			return fmt.Errorf("%w: languages.%s.%s[%d]: %q %s %s", ErrInvalidRecipe, l.ID, field, i, k, clash, other.ID)
		}
		m[k] = l
	}
	return nil
}

// Lookup finds a language by id or alias, ignoring case. An unknown name
// is an error wrapping ErrUnknownLanguage that lists the known ids.
func (t *Table) Lookup(name string) (*Language, error) {
	if l, ok := t.byName[strings.ToLower(strings.TrimSpace(name))]; ok {
		return l, nil
	}
	return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownLanguage, name, strings.Join(t.IDs(), ", "))
}

// ForFile finds a language by the extension of a file name, ignoring case.
func (t *Table) ForFile(name string) (*Language, error) {
	ext := strings.ToLower(filepath.Ext(name))
	if l, ok := t.byExt[ext]; ok && ext != "" {
		return l, nil
	}
	return nil, fmt.Errorf("%w for file %q: no language has the extension %q (known: %s)",
		ErrUnknownLanguage, name, ext, strings.Join(t.IDs(), ", "))
}

// All returns the languages sorted by id.
func (t *Table) All() []*Language {
	return append([]*Language(nil), t.sorted...)
}

// IDs returns the language ids, sorted.
func (t *Table) IDs() []string {
	ids := make([]string, len(t.sorted))
	for i, l := range t.sorted {
		ids[i] = l.ID
	}
	return ids
}
