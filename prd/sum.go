package prd

import (
	"hash/maphash"
	"math/bits"
	"unsafe"
)

// A story's sum tells whether it changed since it was parsed, so that
// Marshal can write it as its text, without keeping a copy of every story
// to compare with: a file of ten thousand stories is read by commands that
// save one change and exit, and the copies were a tenth of what they
// spent, in memory to fault in and to free.
//
// A string is summed by where it is when it lies in the story's text as
// parsed, raw: that text is never written to and the story keeps it, so
// the place stands for the value, and summing every string a file holds
// costs no more than reading its headers. Any other string (one with
// escapes, which decoding copies, or one set since) is summed by its
// value.
//
// A field is one word, a list a word for its length and one for each
// element. Each word is mixed into one of two lanes, in turn, by a step
// that is a bijection of the lane (xor, a multiplication by an odd
// number, a rotation) and of the word: two stories that differ in one
// word always sum differently, such as a story whose number changed, or a
// string changed to another piece of its text. Other changes sum alike
// with a chance of about one in 2^64.

// sumSeed seeds the sums of strings by value.
var sumSeed = maphash.MakeSeed()

// summer sums a story's fields, in two lanes that take words in turn, so
// that the processor can work on both at once.
type summer struct {
	a, b   uint64
	lo, hi uintptr // where raw lies
}

// sum returns the sum of the exported fields of s, whose text as parsed is
// raw.
func sum(s *Story, raw []byte) uint64 {
	var m summer
	if uint64(len(raw)) < 1<<32 { // where a string lies fits in one word
		m.lo = uintptr(unsafe.Pointer(unsafe.SliceData(raw)))
		m.hi = m.lo + uintptr(len(raw))
	}
	m.str(s.ID)
	m.str(s.Title)
	m.str(s.Description)
	m.strs(s.AcceptanceCriteria)
	m.word(uint64(s.Priority))
	m.flag(s.HasPriority)
	m.str(s.Notes)
	m.strs(s.Checks)
	m.strs(s.DependsOn)
	m.flag(s.Passes)
	m.word(uint64(s.Attempts))
	m.str(s.Blocked)
	m.str(s.Failed)
	m.word(uint64(len(s.Answers)))
	for _, a := range s.Answers {
		m.str(a.Question)
		m.str(a.Answer)
	}
	return m.a ^ bits.RotateLeft64(m.b, 32)
}

const prime1 = 0x9E3779B185EBCA87

func (m *summer) word(x uint64) {
	m.a, m.b = m.b, bits.RotateLeft64((m.a^x)*prime1, 31)
}

func (m *summer) flag(b bool) {
	if b {
		m.word(1)
	} else {
		m.word(0)
	}
}

// str sums s as one word: where it lies in raw and its length, or its
// value's hash.
func (m *summer) str(s string) {
	p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
	switch {
	case len(s) == 0:
		m.word(0)
	case p >= m.lo && p+uintptr(len(s)) <= m.hi:
		m.word(uint64(p-m.lo) | uint64(len(s))<<32)
	default:
		m.word(maphash.String(sumSeed, s))
	}
}

func (m *summer) strs(ss []string) {
	m.word(uint64(len(ss)))
	for _, s := range ss {
		m.str(s)
	}
}
