package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// parseJSON reads a stream of JSON values one after another (whitespace
// between them, nothing else), each an object or an array of objects.
// Whatever follows a value must be another such value: trailing bytes are
// an error naming the document and its byte offset.
func parseJSON(file string, data []byte) ([]entry, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var es []entry
	for doc := 1; ; doc++ {
		start := skip(data, int(dec.InputOffset()), " \t\r\n")
		at := source{file: file, doc: doc, pos: fmt.Sprintf("offset %d", start)}
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return es, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: invalid JSON: %w", at, err)
		}
		if raw[0] != '[' {
			s, err := jsonObject(raw)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", at, err)
			}
			es = append(es, entry{s, at})
			continue
		}
		items, err := jsonArray(raw, at, start)
		if err != nil {
			return nil, err
		}
		es = append(es, items...)
	}
}

// jsonArray reads the objects of one array, raw, found at offset base.
func jsonArray(raw []byte, at source, base int) ([]entry, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // [
		return nil, fmt.Errorf("%s: invalid JSON: %w", at, err)
	}
	var es []entry
	for i := 1; dec.More(); i++ {
		item := at
		item.item = i
		item.pos = fmt.Sprintf("offset %d", base+skip(raw, int(dec.InputOffset()), " \t\r\n,"))
		var r json.RawMessage
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("%s: invalid JSON: %w", item, err)
		}
		s, err := jsonObject(r)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", item, err)
		}
		es = append(es, entry{s, item})
	}
	return es, nil
}

// jsonObject decodes one object strictly: unknown fields are errors, and so
// are repeated ones, which encoding/json would quietly let the last win.
func jsonObject(raw []byte) (docSpec, error) {
	var s docSpec
	if raw[0] != '{' {
		return s, fmt.Errorf("want an object (\"kind\": ..., \"name\": ...), found %.20s", raw)
	}
	if key, err := repeatedKey(json.NewDecoder(bytes.NewReader(raw)), false); err != nil || key != "" {
		if err == nil {
			err = fmt.Errorf("field %q is given twice", key)
		}
		return s, fmt.Errorf("invalid JSON: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return s, fmt.Errorf("invalid JSON: %w", err)
	}
	return s, nil
}

// repeatedKey returns the first key that an object in the next value
// repeats, or "". Keys are compared as encoding/json matches them to
// fields: without regard to case (ToLower of ToUpper also folds the
// Kelvin sign and the long s, as encoding/json does); those of a map
// (exact: a volume's volumeAttributes) exactly, as encoding/json keys a
// map.
func repeatedKey(dec *json.Decoder, exact bool) (string, error) {
	t, err := dec.Token()
	if err != nil {
		return "", err
	}
	switch t {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return "", err
			}
			key, _ := k.(string)
			folded := strings.ToLower(strings.ToUpper(key))
			if exact {
				folded = key
			}
			if seen[folded] {
				return key, nil
			}
			seen[folded] = true
			if r, err := repeatedKey(dec, !exact && folded == "volumeattributes"); r != "" || err != nil {
				return r, err
			}
		}
	case json.Delim('['):
		for dec.More() {
			if r, err := repeatedKey(dec, false); r != "" || err != nil {
				return r, err
			}
		}
	default:
		return "", nil
	}
	_, err = dec.Token() // the closing } or ]
	return "", err
}

// skip returns the offset of the first byte at or after off not in set.
func skip(data []byte, off int, set string) int {
	for off < len(data) && strings.IndexByte(set, data[off]) >= 0 {
		off++
	}
	return off
}
