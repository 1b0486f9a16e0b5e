package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"
)

// maxJSONDepth bounds the nesting of a JSON value: objects nest four deep
// at most (a workload's volumes).
const maxJSONDepth = 32

// decodeJSON reads a stream of JSON values one after another (whitespace
// between them, nothing else), each an object or an array of objects, an
// array item by item. Whatever follows a value must be another such value:
// trailing bytes are an error naming the document and its byte offset.
func decodeJSON(file string, r io.Reader, fn func(entry) error) error {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	for doc := 1; ; doc++ {
		at := source{file: file, doc: doc, unit: "offset", pos: int(nextOffset(dec))}
		t, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: invalid JSON: %w", at, err)
		}
		if t != json.Delim('[') {
			if err := jsonObject(dec, t, at, fn); err != nil {
				return err
			}
			continue
		}
		for i := 1; dec.More(); i++ {
			item := at
			item.item, item.unit, item.pos = i, "offset", int(nextOffset(dec))
			t, err := dec.Token()
			if err != nil {
				return fmt.Errorf("%s: invalid JSON: %w", item, err)
			}
			if err := jsonObject(dec, t, item, fn); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil { // ]
			return fmt.Errorf("%s: invalid JSON: %w", at, unexpectedEOF(err))
		}
	}
}

// jsonObject reads the value that starts with t as one object.
func jsonObject(dec *json.Decoder, t json.Token, at source, fn func(entry) error) error {
	n, err := jsonNode(dec, t, 0)
	if err != nil {
		return fmt.Errorf("%s: invalid JSON: %w", at, unexpectedEOF(err))
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("%s: want an object (\"kind\": ..., \"name\": ...), found %s", at, describe(n))
	}
	s, err := specOf(n)
	if err != nil {
		return fmt.Errorf("%s: %w", at, err)
	}
	return fn(entry{s, at})
}

// jsonNode reads the value that starts with t as a node tree, for specOf:
// strings, numbers, booleans and null keep their JSON types; keys keep
// their order and spelling.
func jsonNode(dec *json.Decoder, t json.Token, depth int) (*yaml.Node, error) {
	if depth > maxJSONDepth {
		return nil, fmt.Errorf("nested deeper than %d", maxJSONDepth)
	}
	scalar := func(tag, v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: v} }
	switch v := t.(type) {
	case string:
		return scalar("!!str", v), nil
	case json.Number:
		if strings.ContainsAny(string(v), ".eE") {
			return scalar("!!float", string(v)), nil
		}
		return scalar("!!int", string(v)), nil
	case bool:
		return scalar("!!bool", fmt.Sprint(v)), nil
	case nil:
		return scalar("!!null", "null"), nil
	}
	n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	if t == json.Delim('{') {
		n.Kind, n.Tag = yaml.MappingNode, "!!map"
	}
	for dec.More() {
		if n.Kind == yaml.MappingNode {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, scalar("!!str", k.(string)))
		}
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		c, err := jsonNode(dec, t, depth+1)
		if err != nil {
			return nil, err
		}
		n.Content = append(n.Content, c)
	}
	_, err := dec.Token() // } or ]
	return n, err
}

// unexpectedEOF: the end of the input inside a value.
func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// nextOffset returns the offset of the next value: past the whitespace and
// comma the decoder has buffered but not read.
func nextOffset(dec *json.Decoder) int64 {
	off := dec.InputOffset()
	br, ok := dec.Buffered().(io.ByteReader)
	if !ok {
		return off
	}
	for {
		b, err := br.ReadByte()
		if err != nil || !strings.ContainsRune(" \t\r\n,", rune(b)) {
			return off
		}
		off++
	}
}
