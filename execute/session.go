package execute

import (
	"fmt"
	"regexp"
)

var sessionIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidateSessionID accepts a session id that matches
// ^[A-Za-z0-9_-]{1,64}$, the only form that can never name a path outside
// the sessions directory.
func ValidateSessionID(id string) error {
	if !sessionIDPattern.MatchString(id) {
		return fmt.Errorf("%w %q: it must be 1 to 64 letters, digits, '_' or '-'", ErrInvalidSessionID, id)
	}
	return nil
}
