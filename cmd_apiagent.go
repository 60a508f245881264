package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/ralph-harness/ralph/agent/api"
)

// maxPrompt bounds the prompt read from stdin; ralph's own prompts are far
// smaller.
const maxPrompt = 16 << 20

// apiAgentCommand is the built-in API agent that agent.api runs: ralph
// itself, started by the loop like any agent, with the prompt on stdin and
// Claude Code's stream-json on stdout. The key is read from the variable
// --api-key-env names, never from the command line.
func apiAgentCommand(e env) *cli.Command {
	return &cli.Command{
		Name:   "api-agent",
		Hidden: true,
		Usage:  "run the built-in API agent on the prompt on stdin (what agent.api runs)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "api", Usage: "`API`: anthropic or openai", Required: true},
			&cli.StringFlag{Name: "model", Usage: "the model's `NAME`", Required: true},
			&cli.StringFlag{Name: "base-url", Usage: "the API's `URL` (default: the provider's public one)"},
			&cli.StringFlag{Name: "api-key-env", Usage: "the `VARIABLE` that holds the key (default: ANTHROPIC_API_KEY or OPENAI_API_KEY)"},
			&decimalFlag{cli.IntFlag{Name: "max-turns", Value: api.DefaultMaxTurns, Usage: "the most replies of the model in one run"}},
			&decimalFlag{cli.IntFlag{Name: "max-output-tokens", Value: api.DefaultMaxOutputTokens, Usage: "the most tokens of one reply"}},
			&cli.Float64Flag{Name: "price-input-per-mtok", Usage: "USD per million input tokens, for the cost when the provider reports none"},
			&cli.Float64Flag{Name: "price-output-per-mtok", Usage: "USD per million output tokens"},
		},
		OnUsageError: onUsageError,
		Action: stopsOnSignal(inDir(func(c *cli.Context, dir string) error {
			name := c.String("api")
			if name != api.Anthropic && name != api.OpenAI {
				return usageErrorf("--api %q: want %s or %s", name, api.Anthropic, api.OpenAI)
			}
			prompt, err := io.ReadAll(io.LimitReader(os.Stdin, maxPrompt))
			if err != nil {
				return fmt.Errorf("read the prompt: %w", err)
			}
			keyEnv := c.String("api-key-env")
			if keyEnv == "" {
				keyEnv = api.DefaultKeyEnv(name)
			}
			code, err := api.Run(c.Context, api.Options{
				API:             name,
				Model:           c.String("model"),
				BaseURL:         c.String("base-url"),
				KeyEnv:          keyEnv,
				Key:             os.Getenv(keyEnv),
				MaxTurns:        c.Int("max-turns"),
				MaxOutputTokens: c.Int("max-output-tokens"),
				PriceInput:      c.Float64("price-input-per-mtok"),
				PriceOutput:     c.Float64("price-output-per-mtok"),
				Retries:         api.DefaultRetries,
				Dir:             dir,
				Prompt:          string(prompt),
				Out:             c.App.Writer,
				Now:             e.now,
			})
			switch {
			case errors.Is(err, api.ErrInterrupted):
				return &apiAgentError{context.Canceled}
			case err != nil:
				return &apiAgentError{err}
			case code != 0:
				// The result event on stdout says what happened.
				return &apiAgentError{errAPIAgentFailed}
			}
			return nil
		})),
	}
}

// errAPIAgentFailed is the API agent's exit status 1: its run ended
// without the model finishing, as its result event says.
var errAPIAgentFailed = errors.New("the run ended before the model finished (its result says why)")

// apiAgentError is how the API agent's run ended, said on its stderr as
// "ralph api-agent: error: …". Its stderr is the agent's output in the
// loop's, where "ralph: error:" would read as the loop's own end while the
// loop goes on.
type apiAgentError struct{ err error }

func (e *apiAgentError) Error() string { return e.err.Error() }
func (e *apiAgentError) Unwrap() error { return e.err }
