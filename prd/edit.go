package prd

import (
	"bytes"
	"fmt"
)

// This file holds the edits a person makes through `ralph task`: each
// changes the stories in memory only; prd.Update saves them.

// AddStory appends s to f as a new story, written the way stories usually
// are: id, title, description, acceptanceCriteria, priority, then
// "passes": false, then checks and dependsOn; empty fields are left out.
// Only the exported fields of s are used. It does not validate: call
// Validate afterwards.
func (f *File) AddStory(s Story) *Story {
	var b bytes.Buffer
	n := 0
	member := func(k string, v any) {
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		b.Write(encode(k))
		b.WriteByte(':')
		b.Write(encode(v))
	}
	b.WriteByte('{')
	member("id", s.ID)
	member("title", s.Title)
	if s.Description != "" {
		member("description", s.Description)
	}
	if len(s.AcceptanceCriteria) > 0 {
		member("acceptanceCriteria", s.AcceptanceCriteria)
	}
	if s.HasPriority {
		member("priority", s.Priority)
	}
	member("passes", false)
	if s.Notes != "" {
		member("notes", s.Notes)
	}
	if len(s.Checks) > 0 {
		member("checks", s.Checks)
	}
	if len(s.DependsOn) > 0 {
		member("dependsOn", s.DependsOn)
	}
	b.WriteByte('}')
	// Decoding the text gives the new story the raw members that Marshal
	// writes back, in this order.
	ns, _ := parseStory(b.Bytes())
	ns.raw = b.Bytes()
	ns.sum = sum(ns, ns.raw)
	f.Stories = append(f.Stories, ns)
	return ns
}

// Validate checks f as Parse does (ids, titles, dependencies, counts),
// after an edit; messages are prefixed by name.
func (f *File) Validate(name string) error {
	return f.validate(name, true)
}

// Answer records a person's answer to the question s is blocked on, and
// unblocks it. It fails when s is not blocked.
func (s *Story) Answer(text string) error {
	if s.Blocked == "" {
		return fmt.Errorf("%s is not blocked: there is no question to answer", s.ID)
	}
	s.Answers = append(s.Answers, Answer{Question: s.Blocked, Answer: text})
	s.Blocked = ""
	return nil
}

// Reset makes s a story to work on from scratch: not passing, no attempts,
// neither failed nor blocked. Its answers are kept.
func (s *Story) Reset() {
	s.SetStatus(Status{})
}
