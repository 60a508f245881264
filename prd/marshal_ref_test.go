package prd

// This file keeps Marshal as it was before it was made fast, so that a
// test can check that the two write the same bytes.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

func refLookup[T any](keys []key[T], name string) *key[T] {
	i := slices.IndexFunc(keys, func(k key[T]) bool { return k.name == name })
	if i < 0 {
		return nil
	}
	return &keys[i]
}

func (f *File) refMarshal() ([]byte, error) {
	var compact bytes.Buffer
	refWriteObject(&compact, f, f.orig, f.fields, fileKeys)
	var out bytes.Buffer
	if err := json.Indent(&out, compact.Bytes(), "", "  "); err != nil {
		// Every piece was valid JSON: this is a bug, not bad input.
		return nil, fmt.Errorf("marshal: %w", err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// refStoriesJSON encodes stories as a compact JSON array.
func refStoriesJSON(stories []*Story) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, s := range stories {
		if i > 0 {
			b.WriteByte(',')
		}
		var fs []field
		var orig *Story
		if s.raw != nil {
			fs = fieldsOf(s.raw)
			orig, _ = parseStory(s.raw)
		}
		refWriteObject(&b, s, orig, fs, storyKeys)
	}
	b.WriteByte(']')
	return b.Bytes()
}

// refWriteObject writes t as a compact JSON object with the members fs it was
// parsed from, known keys taken from t where they differ from orig (all of
// them if orig is nil), then the known keys fs lacks.
func refWriteObject[T any](b *bytes.Buffer, t, orig *T, fs []field, keys []key[T]) {
	n := 0
	member := func(k, v []byte) {
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('{')
	seen := make(map[string]bool)
	for _, f := range fs {
		k := refLookup(keys, f.key)
		if k == nil {
			member(f.rawKey, f.value)
			continue
		}
		seen[f.key] = true
		v, _ := k.get(t)
		if orig != nil {
			if was, _ := k.get(orig); refSame(v, was) {
				member(f.rawKey, f.value)
				continue
			}
		}
		if v != nil {
			member(f.rawKey, refEncode(v))
		}
	}
	for _, k := range keys {
		if v, add := k.get(t); add && !seen[k.name] {
			member(refEncode(k.name), refEncode(v))
		}
	}
	b.WriteByte('}')
}

// same reports whether two values returned by a key's get are equal.
func refSame(a, b any) bool {
	switch a := a.(type) {
	case []string:
		b, ok := b.([]string)
		return ok && slices.Equal(a, b)
	case []Answer:
		b, ok := b.([]Answer)
		return ok && slices.Equal(a, b)
	case storyList:
		return false // always rewritten from its parts
	}
	return a == b
}

// encode encodes a value returned by a key's get. Unlike json.Marshal it leaves
// <, > and & alone: prd.json is read by people, not by browsers.
func refEncode(v any) []byte {
	switch v := v.(type) {
	case storyList:
		return refStoriesJSON(v)
	case []string:
		if v == nil {
			v = []string{}
		}
		return refEncodeValue(v)
	case []Answer:
		if v == nil {
			v = []Answer{}
		}
		return refEncodeValue(v)
	}
	return refEncodeValue(v)
}

func refEncodeValue(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	// Strings, string slices, ints and bools always encode.
	_ = enc.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
