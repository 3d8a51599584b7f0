package mcpserver

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/multifile"
)

// The arguments of a program of several files, which execute_code and
// judge_code share, and execute_code's artifacts.

func filesSchema() map[string]any {
	return map[string]any{
		"type": "array", "maxItems": multifile.MaxFiles,
		"description": "More files of the program, written beneath /workspace before it is compiled or run (at most " +
			strconv.Itoa(multifile.MaxFiles) + " files, " + strconv.Itoa(multifile.MaxTotalBytes) + " bytes together once decoded). " +
			"Compiled languages compile every source: C and C++ all .c/.cpp files, Java all .java files, Go the .go files at the top " +
			"(or the module, with a go.mod), Rust the entry with its modules.",
		"items": map[string]any{
			"type":                 "object",
			"additionalProperties": false,
			"required":             []string{"path", "content"},
			"properties": map[string]any{
				"path": map[string]any{"type": "string", "minLength": 1, "maxLength": multifile.MaxPathBytes,
					"description": "Path relative to /workspace, such as src/util.c: not absolute, no \"..\"."},
				"content":    map[string]any{"type": "string", "description": "The file's content, as text or in base64 (encoding)."},
				"encoding":   map[string]any{"type": "string", "enum": []string{multifile.EncodingUTF8, multifile.EncodingBase64}, "default": multifile.EncodingUTF8, "description": "How content is written: utf8 text or base64."},
				"executable": map[string]any{"type": "boolean", "default": false, "description": "Make the file executable (mode 0755)."},
			},
		},
	}
}

func entrySchema() map[string]any {
	return map[string]any{"type": "string", "maxLength": multifile.MaxPathBytes,
		"description": "The file to run or compile, one of files (or code's own file). Default: code's file (main.<ext>). Required when code is empty."}
}

func artifactsSchema() map[string]any {
	return map[string]any{
		"type":                 "object",
		"additionalProperties": false,
		"description":          "Return the contents of the files the program leaves in /workspace (base64, in each artifact's content).",
		"properties": map[string]any{
			"include_content": map[string]any{"type": "boolean", "default": false, "description": "Return the artifacts' contents."},
			"max_bytes": map[string]any{"type": "integer", "minimum": 1, "maximum": execute.MaxArtifactContentBytes, "default": execute.DefaultArtifactContentBytes,
				"description": "Most bytes of content returned, all files together; a file that does not fit is listed without its content."},
		},
	}
}

// argumentError words a refused request in the tool's terms: a file's
// field is named as the argument it is ("argument \"files[2].path\": ...").
func argumentError(err error) error {
	var fe *multifile.Error
	if errors.As(err, &fe) {
		return fmt.Errorf("argument %q: %s", fe.Field, fe.Reason)
	}
	if errors.Is(err, execute.ErrInvalidArtifacts) {
		return fmt.Errorf("argument \"artifacts\": %w", err)
	}
	return err
}
