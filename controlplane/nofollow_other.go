//go:build !unix

package controlplane

const openFlags = 0
