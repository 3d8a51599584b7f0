package docker

import (
	"encoding/json"
	"io"
)

// maxStatsBytes bounds a stats document; the engine's are a few KB.
const maxStatsBytes = 1 << 20

func decodeJSON(r io.Reader, v any) error {
	return json.NewDecoder(io.LimitReader(r, maxStatsBytes)).Decode(v)
}
