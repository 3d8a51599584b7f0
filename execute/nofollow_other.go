//go:build !unix

package execute

const openFlags = 0
