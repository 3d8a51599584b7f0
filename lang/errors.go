package lang

import "errors"

// Error classes of the package. Callers test them with errors.Is.
var (
	// ErrUnknownLanguage: no language has the name or extension asked for.
	// The message lists the known ids.
	ErrUnknownLanguage = errors.New("unknown language")
	// ErrInvalidRecipe: a recipe, embedded or from the configuration, is
	// malformed. The message names the field.
	ErrInvalidRecipe = errors.New("invalid language recipe")
	// ErrInvalidOption: a request's program arguments, compiler flags or
	// environment variables break a rule. The error is an *OptionError
	// naming the field.
	ErrInvalidOption = errors.New("invalid program option")
)
