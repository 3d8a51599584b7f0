//go:build !linux

package executor

import "errors"

// capWorkspace cannot cap a workspace outside Linux.
func capWorkspace(string, int64) (func() error, error) {
	return nil, errors.New("size-capped workspaces need Linux")
}
