package cli

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

const keyhashAbout = `Print the SHA-256 of an API key, for server.api_keys' key_sha256: the
server keeps only the digest, so the key itself is written nowhere. The
key is read from standard input (one line; without echo on a terminal):

  printf %s "$KEY" | coderunner keyhash

With --new it makes a random key and prints it (give it to the client;
it is shown only this once) with its digest:

  coderunner keyhash --new

A key is 16 to 4096 printable characters without spaces.`

// Bounds of an API key read by keyhash.
const (
	minKeyLen = 16
	maxKeyLen = 4096
)

// keyhashOut is keyhash --json's output.
type keyhashOut struct {
	Key       string `json:"key,omitempty"`
	KeySHA256 string `json:"key_sha256"`
}

func (a *App) keyhashCmd(_ context.Context, args []string) int {
	fs, c := a.flagSet("keyhash", "", keyhashAbout, false)
	var generate bool
	fs.BoolVar(&generate, "new", false, "make a random key and print it with its digest")
	pos, code, done := a.parse(fs, c, args)
	if done {
		return code
	}
	if len(pos) > 0 {
		// A key on the command line would be in the shell's history and
		// in every process listing.
		return a.fail("keyhash", "no arguments expected: give the key on standard input, never on the command line")
	}
	var out keyhashOut
	if generate {
		var b [32]byte
		_, _ = rand.Read(b[:])
		out.Key = "cr_" + base64.RawURLEncoding.EncodeToString(b[:])
	} else {
		key, err := a.readKey()
		if err != nil {
			return a.fail("keyhash", "%v", err)
		}
		out.Key = key
	}
	sum := sha256.Sum256([]byte(out.Key))
	out.KeySHA256 = hex.EncodeToString(sum[:])
	if !generate {
		out.Key = ""
	}
	if c.json {
		b, _ := json.Marshal(out)
		fmt.Fprintf(a.Stdout, "%s\n", b)
		return ExitOK
	}
	if generate {
		fmt.Fprintf(a.Stdout, "key: %s\nkey_sha256: %s\n", out.Key, out.KeySHA256)
		return ExitOK
	}
	fmt.Fprintln(a.Stdout, out.KeySHA256)
	return ExitOK
}

// readKey reads one key from standard input, without echo when it is a
// terminal, and checks it.
func (a *App) readKey() (string, error) {
	if f, ok := a.Stdin.(*os.File); ok {
		if old, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err == nil {
			quiet := *old
			quiet.Lflag &^= unix.ECHO
			if unix.IoctlSetTermios(int(f.Fd()), unix.TCSETS, &quiet) == nil {
				defer func() {
					_ = unix.IoctlSetTermios(int(f.Fd()), unix.TCSETS, old)
					fmt.Fprintln(a.Stderr)
				}()
			}
			fmt.Fprint(a.Stderr, "API key: ")
		}
	}
	line, err := bufio.NewReaderSize(io.LimitReader(a.Stdin, maxKeyLen+3), maxKeyLen+3).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("unable to read the key: %w", err)
	}
	key := strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	return key, checkKey(key)
}

// checkKey refuses what cannot be a usable key: what an Authorization
// header cannot carry as it is, and what is short enough to guess.
func checkKey(key string) error {
	switch {
	case key == "":
		return errors.New("no key on standard input (printf %s \"$KEY\" | coderunner keyhash, or --new)")
	case len(key) > maxKeyLen:
		return fmt.Errorf("the key is longer than %d characters", maxKeyLen)
	case len(key) < minKeyLen:
		return fmt.Errorf("the key is %d characters, fewer than %d: a short key can be guessed (coderunner keyhash --new makes one)", len(key), minKeyLen)
	}
	for _, r := range key {
		if r <= ' ' || r > '~' {
			return errors.New("the key holds a space, a control character or a character outside ASCII, which an Authorization header does not carry as it is; only the first line of input is the key")
		}
	}
	return nil
}
