package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// anthropicVersion is the version of the Messages API the client speaks.
const anthropicVersion = "2023-06-01"

// anthropic is a client of the Anthropic Messages API: POST
// {base_url}/v1/messages with stream: true, answered with server-sent
// events (message_start, content_block_start, content_block_delta,
// content_block_stop, message_delta, message_stop, ping, error).
type anthropic struct {
	o   Options
	url string
}

func newAnthropic(o Options) *anthropic {
	return &anthropic{o: o, url: strings.TrimRight(o.BaseURL, "/") + "/v1/messages"}
}

func (a *anthropic) endpoint() string { return a.url }

// anthropicBlock is a content block of a request message.
type anthropicBlock struct {
	Type         string          `json:"type"`
	Text         string          `json:"text,omitempty"`
	ID           string          `json:"id,omitempty"`
	Name         string          `json:"name,omitempty"`
	Input        json.RawMessage `json:"input,omitempty"`
	ToolUseID    string          `json:"tool_use_id,omitempty"`
	Content      string          `json:"content,omitempty"`
	IsError      bool            `json:"is_error,omitempty"`
	CacheControl *cacheControl   `json:"cache_control,omitempty"`
}

type cacheControl struct {
	Type string `json:"type"`
}

type anthropicMessage struct {
	Role    string           `json:"role"`
	Content []anthropicBlock `json:"content"`
}

type anthropicTool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl *cacheControl   `json:"cache_control,omitempty"`
}

// body builds the request. The system prompt and tools, and the
// conversation up to its last message, are marked for the prompt cache:
// each turn of a run resends all of it.
func (a *anthropic) body(conv []message) ([]byte, error) {
	msgs := make([]anthropicMessage, 0, len(conv))
	for _, m := range conv {
		var blocks []anthropicBlock
		// The API refuses a text block of whitespace alone, which models
		// send before a tool call ("\n\n"): it says nothing, so it goes.
		if strings.TrimSpace(m.Text) != "" {
			blocks = append(blocks, anthropicBlock{Type: "text", Text: m.Text})
		}
		for _, c := range m.Calls {
			input, err := objectArgs(c.Args)
			if err != nil {
				// The API takes only an object; the tool result says
				// what was wrong with the model's arguments.
				input = json.RawMessage("{}")
			}
			blocks = append(blocks, anthropicBlock{Type: "tool_use", ID: c.ID, Name: c.Name, Input: input})
		}
		for _, r := range m.Results {
			content := r.Content
			if content == "" {
				content = "(no output)"
			}
			blocks = append(blocks, anthropicBlock{Type: "tool_result", ToolUseID: r.CallID, Content: content, IsError: r.IsError})
		}
		if len(blocks) == 0 {
			// A message needs content, and a text block needs text.
			blocks = append(blocks, anthropicBlock{Type: "text", Text: "(empty)"})
		}
		msgs = append(msgs, anthropicMessage{Role: m.Role, Content: blocks})
	}
	last := &msgs[len(msgs)-1]
	last.Content[len(last.Content)-1].CacheControl = &cacheControl{Type: "ephemeral"}
	defs := toolDefs()
	tools := make([]anthropicTool, len(defs))
	for i, d := range defs {
		tools[i] = anthropicTool{Name: d.Name, Description: d.Description, InputSchema: d.Schema}
	}
	tools[len(tools)-1].CacheControl = &cacheControl{Type: "ephemeral"}
	return json.Marshal(map[string]any{
		"model":      a.o.Model,
		"max_tokens": a.o.MaxOutputTokens,
		"stream":     true,
		"system":     []anthropicBlock{{Type: "text", Text: systemPrompt, CacheControl: &cacheControl{Type: "ephemeral"}}},
		"tools":      tools,
		"messages":   msgs,
	})
}

func (a *anthropic) request(conv []message) ([]byte, http.Header, error) {
	header := http.Header{"anthropic-version": {anthropicVersion}}
	if a.o.Key != "" {
		header.Set("x-api-key", a.o.Key)
	}
	body, err := a.body(conv)
	return body, header, err
}

// anthropicUsage is the usage of message_start's message and of
// message_delta.
type anthropicUsage struct {
	Input         *int64 `json:"input_tokens"`
	Output        *int64 `json:"output_tokens"`
	CacheCreation *int64 `json:"cache_creation_input_tokens"`
	CacheRead     *int64 `json:"cache_read_input_tokens"`
}

// into sets the counts the usage holds; message_delta's counts are
// cumulative, and replace message_start's.
func (u anthropicUsage) into(dst *usage) {
	for _, f := range []struct {
		v   *int64
		dst *int64
	}{{u.Input, &dst.Input}, {u.Output, &dst.Output}, {u.CacheCreation, &dst.CacheCreation}, {u.CacheRead, &dst.CacheRead}} {
		if f.v != nil {
			*f.dst = *f.v
		}
	}
}

// anthropicContent is a content block of an answer.
type anthropicContent struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// stream reads a streamed answer. A stream that ends before message_stop
// was cut off: the reply is incomplete and the request is tried again.
func (a *anthropic) stream(body io.Reader, s sink) (reply, error) {
	var rep reply
	type block struct {
		typ  string
		call *toolCall
		args strings.Builder
		// input is the tool call's input as content_block_start gave it:
		// {} from the API itself, which streams the input in deltas; the
		// whole of it from some servers that speak its protocol.
		input json.RawMessage
		said  bool // a text block's text has begun
	}
	blocks := map[int]*block{}
	var order []int
	text := func(b *block, t string) {
		if t == "" {
			return
		}
		if !b.said {
			b.said = true
			// A block ends the text before it, on screen too when the
			// server sent no content_block_stop.
			s.endText()
			rep.Text = joinText(rep.Text, "")
		}
		rep.Text += t
		s.text(t)
	}
	sse := newSSEReader(body)
	for {
		ev, err := sse.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("the stream ended before message_stop")
			}
			return partial(rep), &apiError{Network: true, Message: "stream cut off: " + err.Error()}
		}
		s.alive()
		var data struct {
			Type    string `json:"type"`
			Index   int    `json:"index"`
			Message struct {
				ID    string         `json:"id"`
				Usage anthropicUsage `json:"usage"`
			} `json:"message"`
			ContentBlock anthropicContent `json:"content_block"`
			Delta        struct {
				Type        string `json:"type"`
				Text        string `json:"text"`
				PartialJSON string `json:"partial_json"`
				StopReason  string `json:"stop_reason"`
			} `json:"delta"`
			Usage anthropicUsage `json:"usage"`
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(ev.Data, &data); err != nil {
			// An event that is not JSON is passed over; if it held a
			// piece of a tool call, the call's arguments say so.
			continue
		}
		typ := data.Type
		if typ == "" {
			typ = ev.Name
		}
		switch typ {
		case "message_start":
			rep.ID = data.Message.ID
			data.Message.Usage.into(&rep.Usage)
		case "content_block_start":
			b := &block{typ: data.ContentBlock.Type}
			if _, dup := blocks[data.Index]; !dup {
				order = append(order, data.Index)
			}
			blocks[data.Index] = b
			switch b.typ {
			case "text":
				text(b, data.ContentBlock.Text)
			case "tool_use":
				b.call = &toolCall{ID: data.ContentBlock.ID, Name: data.ContentBlock.Name}
				b.input = data.ContentBlock.Input
			}
		case "content_block_delta":
			b := blocks[data.Index]
			if b == nil {
				continue
			}
			switch data.Delta.Type {
			case "text_delta":
				text(b, data.Delta.Text)
			case "input_json_delta":
				b.args.WriteString(data.Delta.PartialJSON)
			}
		case "content_block_stop":
			if b := blocks[data.Index]; b != nil && b.typ == "text" {
				s.endText()
			}
		case "message_delta":
			if data.Delta.StopReason != "" {
				rep.Stop = data.Delta.StopReason
			}
			data.Usage.into(&rep.Usage)
		case "message_stop":
			for _, i := range order {
				b := blocks[i]
				if b.call == nil {
					continue
				}
				b.call.Args = b.args.String()
				if strings.TrimSpace(b.call.Args) == "" {
					b.call.Args = "{}"
					if len(b.input) > 0 && string(b.input) != "null" {
						b.call.Args = string(b.input)
					}
				}
				rep.Calls = append(rep.Calls, *b.call)
			}
			return rep, nil
		case "error":
			// An error in the middle of the stream, such as
			// overloaded_error: the request failed after all.
			return partial(rep), anthropicError(data.Error.Type, data.Error.Message)
		}
		// ping, and event types added later, need nothing.
	}
}

// anthropicError is an error the API sent where a message was to come, with
// the status that goes with its type.
func anthropicError(typ, msg string) *apiError {
	return &apiError{Status: anthropicStatus(typ), Type: typ, Message: oneLine(msg)}
}

// anthropicStatus is the HTTP status that goes with an error type the API
// sends in the middle of a stream, or in an answer of status 200, where
// there is no status of its own.
func anthropicStatus(typ string) int {
	for _, t := range errorTypes {
		if t.typ == typ {
			return t.status
		}
	}
	return http.StatusInternalServerError
}

// whole reads an answer that came as one JSON message.
func (a *anthropic) whole(body io.Reader, s sink) (reply, error) {
	var msg struct {
		Type       string             `json:"type"`
		ID         string             `json:"id"`
		Content    []anthropicContent `json:"content"`
		StopReason string             `json:"stop_reason"`
		Usage      anthropicUsage     `json:"usage"`
		Error      *struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(io.LimitReader(body, maxEvent)).Decode(&msg); err != nil {
		return reply{}, &apiError{Network: true, Message: "read the answer: " + err.Error()}
	}
	if msg.Type == "error" || msg.Error != nil {
		// An error answered with 200, as in the middle of a stream: read
		// as an empty reply, an overloaded API ended the run as if the
		// model had finished, with nothing said.
		var typ, text string
		if msg.Error != nil {
			typ, text = msg.Error.Type, msg.Error.Message
		}
		return reply{}, anthropicError(typ, text)
	}
	rep := reply{ID: msg.ID, Stop: msg.StopReason}
	msg.Usage.into(&rep.Usage)
	for _, c := range msg.Content {
		switch c.Type {
		case "text":
			if c.Text == "" {
				continue
			}
			rep.Text = joinText(rep.Text, c.Text)
			s.text(c.Text)
			s.endText()
		case "tool_use":
			args := string(c.Input)
			if args == "" || args == "null" {
				args = "{}"
			}
			rep.Calls = append(rep.Calls, toolCall{ID: c.ID, Name: c.Name, Args: args})
		}
	}
	return rep, nil
}

// joinText adds a text block to the reply's text before it. Each block
// starts on a line of its own, as the blocks are shown, so that a claim
// the model puts in a block of its own (<ralph>done</ralph> after a
// summary) stands on its own line in the final message.
func joinText(before, block string) string {
	if before == "" || strings.HasSuffix(before, "\n") {
		return before + block
	}
	return before + "\n" + block
}

// objectArgs checks that a tool call's arguments are one JSON object.
func objectArgs(args string) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(args), &m); err != nil {
		return nil, fmt.Errorf("the arguments are not a JSON object: %v", err)
	}
	if m == nil {
		return nil, errors.New("the arguments are null, not a JSON object")
	}
	return json.RawMessage(args), nil
}
