package mcpserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/internal/wsfile"
	"github.com/coderunner/coderunner/session"
)

// Tool names of a session's files.
const (
	ToolWriteFile = "write_file"
	ToolReadFile  = "read_file"
	ToolListFiles = "list_files"
)

// Encodings of write_file's content and read_file's answer.
const (
	EncodingUTF8   = "utf8"
	EncodingBase64 = "base64"
)

// Files reads and writes the files of sessions; *session.Store is one.
// The session is the one of the caller's credential (session.Owner of
// ctx), as for execute_code.
type Files interface {
	WriteFile(ctx context.Context, id, path string, r io.Reader) (session.File, error)
	OpenFile(ctx context.Context, id, path string) (*session.FileReader, error)
	ListFiles(ctx context.Context, id string) ([]session.File, error)
	// MaxFileBytes is the largest file write_file writes and read_file
	// returns.
	MaxFileBytes() int64
}

var _ Files = (*session.Store)(nil)

func (s *Server) addFileTools() {
	if s.files == nil {
		return
	}
	limit := strconv.FormatInt(s.files.MaxFileBytes(), 10)
	sessionID := map[string]any{"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$",
		"description": "The session, as execute_code's session_id: its /workspace."}
	path := map[string]any{"type": "string", "minLength": 1, "maxLength": wsfile.MaxPathBytes,
		"description": "Path relative to /workspace, such as data/in.csv: not absolute, no \"..\", at most " +
			strconv.Itoa(wsfile.MaxDepth) + " levels. Symbolic links are never followed."}
	s.mcp.AddTool(&mcp.Tool{
		Name:  ToolWriteFile,
		Title: "Write a file into a session",
		Description: "Write a file into a session's /workspace, for the next execute_code call with the same session_id " +
			"(the session starts if it is new). Missing directories are made; a file at the path is replaced. At most " +
			limit + " bytes once decoded. Returns the path, size and sha256.",
		InputSchema: map[string]any{
			"type": "object", "additionalProperties": false, "required": []string{"session_id", "path", "content"},
			"properties": map[string]any{
				"session_id": sessionID,
				"path":       path,
				"content":    map[string]any{"type": "string", "description": "The file's content, as text or in base64 (encoding)."},
				"encoding": map[string]any{"type": "string", "enum": []string{EncodingUTF8, EncodingBase64}, "default": EncodingUTF8,
					"description": "How content is given: utf8 text, or base64 for binary files."},
			},
		},
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: true, OpenWorldHint: ptr(false)},
	}, s.writeFile)
	s.mcp.AddTool(&mcp.Tool{
		Name:  ToolReadFile,
		Title: "Read a file of a session",
		Description: "Read a regular file of a session's /workspace (one a program wrote, or write_file). The content comes " +
			"as text when it is UTF-8, else in base64 (encoding says which); at most " + limit + " bytes.",
		InputSchema: map[string]any{
			"type": "object", "additionalProperties": false, "required": []string{"session_id", "path"},
			"properties": map[string]any{"session_id": sessionID, "path": path},
		},
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
	}, s.readFile)
	s.mcp.AddTool(&mcp.Tool{
		Name:        ToolListFiles,
		Title:       "List the files of a session",
		Description: "List the regular files of a session's /workspace, recursively and sorted, each with its size and sha256. Symbolic links are not listed.",
		InputSchema: map[string]any{
			"type": "object", "additionalProperties": false, "required": []string{"session_id"},
			"properties": map[string]any{"session_id": sessionID},
		},
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
	}, s.listFiles)
}

// writeFileArgs are write_file's arguments.
type writeFileArgs struct {
	SessionID string `json:"session_id"`
	Path      string `json:"path"`
	Content   string `json:"content"`
	Encoding  string `json:"encoding"`
}

func (s *Server) writeFile(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a writeFileArgs
	if err := decodeArgs(req.Params.Arguments, &a); err != nil {
		return toolError(err), nil
	}
	if err := checkFileArgs(a.SessionID, &a.Path); err != nil {
		return toolError(err), nil
	}
	var content []byte
	switch strings.ToLower(a.Encoding) {
	case "", EncodingUTF8, "utf-8":
		if !utf8.ValidString(a.Content) {
			return toolError(errors.New(`argument "content": not valid UTF-8; send binary content with "encoding": "base64"`)), nil
		}
		content = []byte(a.Content)
	case EncodingBase64:
		b, err := base64.StdEncoding.Strict().DecodeString(a.Content)
		if err != nil {
			return toolError(fmt.Errorf("argument \"content\": not valid base64: %w", err)), nil
		}
		content = b
	default:
		return toolError(fmt.Errorf("argument \"encoding\": %q is not \"utf8\" or \"base64\"", a.Encoding)), nil
	}
	f, err := s.files.WriteFile(ctx, a.SessionID, a.Path, bytes.NewReader(content))
	if err != nil {
		return s.fileError(ctx, err)
	}
	return structured(f, fmt.Sprintf("wrote %s (%d bytes) in session %s", f.Path, f.Size, a.SessionID), false)
}

// readFileArgs are read_file's arguments.
type readFileArgs struct {
	SessionID string `json:"session_id"`
	Path      string `json:"path"`
}

// fileContent is read_file's answer.
type fileContent struct {
	Path     string `json:"path"`
	Size     int64  `json:"size"`
	SHA256   string `json:"sha256"`
	Encoding string `json:"encoding"`
	Content  string `json:"content"`
}

func (s *Server) readFile(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a readFileArgs
	if err := decodeArgs(req.Params.Arguments, &a); err != nil {
		return toolError(err), nil
	}
	if err := checkFileArgs(a.SessionID, &a.Path); err != nil {
		return toolError(err), nil
	}
	f, err := s.files.OpenFile(ctx, a.SessionID, a.Path)
	if err != nil {
		return s.fileError(ctx, err)
	}
	defer f.Close()
	limit := s.files.MaxFileBytes()
	if f.Size > limit {
		return toolError(fmt.Errorf("argument \"path\": %s holds %d bytes, more than the %d read_file returns", a.Path, f.Size, limit)), nil
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return toolError(fmt.Errorf("unable to read %s: %w", a.Path, err)), nil
	}
	if int64(len(b)) > limit {
		return toolError(fmt.Errorf("argument \"path\": %s grew past the %d bytes read_file returns", a.Path, limit)), nil
	}
	sum := sha256.Sum256(b)
	out := fileContent{Path: a.Path, Size: int64(len(b)), SHA256: hex.EncodeToString(sum[:]), Encoding: EncodingUTF8, Content: string(b)}
	if !utf8.Valid(b) {
		out.Encoding, out.Content = EncodingBase64, base64.StdEncoding.EncodeToString(b)
	}
	return structured(out, fmt.Sprintf("%s: %d bytes (%s) in session %s", out.Path, out.Size, out.Encoding, a.SessionID), false)
}

// listFilesArgs are list_files's arguments.
type listFilesArgs struct {
	SessionID string `json:"session_id"`
}

// fileList is list_files's answer.
type fileList struct {
	Files []session.File `json:"files"`
}

func (s *Server) listFiles(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a listFilesArgs
	if err := decodeArgs(req.Params.Arguments, &a); err != nil {
		return toolError(err), nil
	}
	if err := execute.ValidateSessionID(a.SessionID); err != nil {
		return toolError(fmt.Errorf("argument \"session_id\": %w", err)), nil
	}
	list, err := s.files.ListFiles(ctx, a.SessionID)
	if err != nil {
		return s.fileError(ctx, err)
	}
	return structured(fileList{Files: list}, fmt.Sprintf("%d file(s) in session %s", len(list), a.SessionID), false)
}

// checkFileArgs checks a session id and a path, naming the argument.
func checkFileArgs(id string, path *string) error {
	if err := execute.ValidateSessionID(id); err != nil {
		return fmt.Errorf("argument \"session_id\": %w", err)
	}
	if err := wsfile.CheckPath(*path); err != nil {
		return fmt.Errorf("argument \"path\": %w", err)
	}
	return nil
}

// fileError answers a refused file operation with its reason, naming the
// argument at fault; a cancelled call gets no answer.
func (s *Server) fileError(ctx context.Context, err error) (*mcp.CallToolResult, error) {
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	switch {
	case errors.Is(err, wsfile.ErrInvalidPath), errors.Is(err, wsfile.ErrNotFound), errors.Is(err, wsfile.ErrNotRegular),
		errors.Is(err, wsfile.ErrIsDir), errors.Is(err, wsfile.ErrLink):
		err = fmt.Errorf("argument \"path\": %w", err)
	case errors.Is(err, wsfile.ErrTooLarge):
		err = fmt.Errorf("argument \"content\": %w", err)
	case errors.Is(err, session.ErrNotFound), errors.Is(err, session.ErrInvalidID):
		err = fmt.Errorf("argument \"session_id\": %w", err)
	}
	return toolError(err), nil
}
