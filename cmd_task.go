package main

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/ralph-harness/ralph/internal/plural"
	"github.com/ralph-harness/ralph/internal/textcut"
	"github.com/ralph-harness/ralph/loop"
	"github.com/ralph-harness/ralph/prd"
)

// taskCommand edits prd.json for people and scripts. Every edit is atomic
// and made under prd.json's lock, so a running loop loses nothing and
// nothing is lost to it.
func taskCommand() *cli.Command {
	return &cli.Command{
		Name:  "task",
		Usage: "add, list, answer, reset or block the stories in prd.json",
		Description: `Each edit rewrites prd.json atomically, under a lock that a running loop
takes too, keeping unknown fields and the order of keys. Bad input changes
nothing and exits 2.`,
		Subcommands: []*cli.Command{
			taskAddCommand(),
			taskListCommand(),
			taskAnswerCommand(),
			taskResetCommand(),
			taskBlockCommand(),
		},
		OnUsageError: onUsageError,
		Before:       brief,
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageErrorf("task: unknown subcommand %q (want add, list, answer, reset or block)", c.Args().First())
			}
			return cli.ShowSubcommandHelp(c)
		},
	}
}

func taskAddCommand() *cli.Command {
	return &cli.Command{
		Name:      "add",
		Usage:     "add a story to prd.json",
		UsageText: `ralph task add --id ID --title TITLE [--description TEXT] [--criteria TEXT]... [--priority N] [--depends-on ID]... [--check CMD]...`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "id", Usage: "the story's `ID`, new in prd.json (required)"},
			&cli.StringFlag{Name: "title", Usage: "the story's `TITLE` (required)"},
			&cli.StringFlag{Name: "description", Usage: "what the story is about, in `TEXT`"},
			&cli.StringSliceFlag{Name: "criteria", Usage: "an acceptance criterion, in `TEXT`; repeat for more"},
			&decimalFlag{cli.IntFlag{Name: "priority", Usage: "the story's priority `N` (1 runs first)", DefaultText: "none: after every story with one"}},
			&cli.StringSliceFlag{Name: "depends-on", Usage: "the `ID` of a story that must pass first; repeat for more"},
			&cli.StringSliceFlag{Name: "check", Usage: "a shell `CMD` that must pass for this story; repeat for more"},
		},
		OnUsageError: onUsageError,
		Action: inDir(func(c *cli.Context, dir string) error {
			if err := checkAddFlags(c); err != nil {
				return err
			}
			s, err := loop.AddStory(taskOptions(c, dir), loop.NewStory{
				ID:                 c.String("id"),
				Title:              c.String("title"),
				Description:        c.String("description"),
				AcceptanceCriteria: c.StringSlice("criteria"),
				Priority:           c.Int("priority"),
				HasPriority:        c.IsSet("priority"),
				DependsOn:          c.StringSlice("depends-on"),
				Checks:             c.StringSlice("check"),
			})
			if err != nil {
				return fmt.Errorf("task add: %w", err)
			}
			_, err = fmt.Fprintf(c.App.Writer, "added %s: %s (%s)\n", s.ID, s.Title, stateNote(s))
			return err
		}),
	}
}

// checkAddFlags reports every problem with the flags of `task add` at
// once, each naming its flag; what needs prd.json is checked under its lock.
func checkAddFlags(c *cli.Context) error {
	var errs []error
	id := c.String("id")
	if id == "" {
		errs = append(errs, errors.New("--id is required"))
	} else if err := prd.CheckID(id); err != nil {
		errs = append(errs, fmt.Errorf("--id %q: %w", textcut.Head(id, prd.MaxID, "…"), err))
	}
	if strings.TrimSpace(c.String("title")) == "" {
		errs = append(errs, errors.New("--title is required"))
	}
	for _, v := range c.StringSlice("criteria") {
		if strings.TrimSpace(v) == "" {
			errs = append(errs, errors.New("--criteria: empty"))
		}
	}
	for _, v := range c.StringSlice("check") {
		if strings.TrimSpace(v) == "" {
			errs = append(errs, errors.New("--check: empty command"))
		}
	}
	for _, v := range c.StringSlice("depends-on") {
		if v == id && id != "" {
			errs = append(errs, fmt.Errorf("--depends-on %q: the story itself", v))
		}
	}
	if len(errs) > 0 {
		return &usageError{err: errors.Join(errs...)}
	}
	return nil
}

// stateNote says a story's state, and on what it waits.
func stateNote(s loop.StoryDetail) string {
	if s.State == "waiting" {
		return "waiting on " + strings.Join(s.WaitsOn, ", ")
	}
	return s.State
}

func taskListCommand() *cli.Command {
	return &cli.Command{
		Name:  "list",
		Usage: "show every story in prd.json and its state (status without the ledger)",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object, for scripts"},
		},
		OnUsageError: onUsageError,
		Action: inDir(func(c *cli.Context, dir string) error {
			l, err := loop.Tasks(previewOptions(dir))
			if err != nil {
				return err
			}
			w := c.App.Writer
			if c.Bool("json") {
				return printJSON(w, l, true)
			}
			var blocked, notes []string
			for _, s := range l.Stories {
				if s.State == "blocked" {
					blocked = append(blocked, s.ID)
				}
				if n := storyNote(s.ID, s.State, s.Blocked, s.Failed, s.WaitsOn); n != "" {
					notes = append(notes, n)
				}
			}
			printSummary(w, l.Project, l.Passing, l.Total, "", l.Next, blocked)
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "STORY\tSTATE\tPRIORITY\tATTEMPTS\tTITLE")
			for _, s := range l.Stories {
				priority := "-"
				if s.Priority != nil {
					priority = strconv.Itoa(*s.Priority)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", s.ID, s.State, priority, s.Attempts, s.Title)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			printNotes(w, notes)
			return nil
		}),
	}
}

// storyAction adapts an action on one story, for task commands whose
// arguments are the story's id and, when text names it, one text (the
// answer, the question): both are checked before fn runs in the -C
// directory.
func storyAction(text string, fn func(c *cli.Context, dir, id, arg string) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		id, arg, err := storyArgs(c, text)
		if errors.Is(err, errHelp) {
			return showHelp(c)
		}
		if err != nil {
			return err
		}
		dir, err := workDir(c)
		if err != nil {
			return err
		}
		return fn(c, dir, id, arg)
	}
}

// taskOptions are the options of a task edit in dir: with harness.toml's
// settings, which say what the guard watches, when they can be read, so
// that an iteration a stopped ralph left open is recorded before the edit
// (see loop.ResetStory and the other edits). Without them, the edit is made
// all the same and the next `ralph loop` records the iteration.
func taskOptions(c *cli.Context, dir string) loop.Options {
	o := loop.Options{Dir: dir, Err: c.App.ErrWriter}
	if cfg, err := loadHarness(dir); err == nil {
		o.Config = cfg
	}
	return o
}

// errHelp is storyArgs' answer to a help flag among the arguments.
var errHelp = errors.New("help asked for")

// storyArgs returns the arguments of a task command that takes a story id
// and, when text names it, one more argument, which must not be blank.
// The command's flags are not parsed (SkipFlagParsing): a help flag asks
// for the command's help (errHelp), and any other argument that begins
// with "-" is refused, not saved as the text; "--" makes what follows it
// arguments whatever they begin with.
func storyArgs(c *cli.Context, text string) (id, arg string, err error) {
	name := "task " + c.Command.Name
	want, usage, hint := 1, "1 argument (ID)", ""
	if text != "" {
		want, usage, hint = 2, `2 arguments (ID "`+text+`")`, "; quote text with spaces"
	}
	args := c.Args().Slice()
	flags := args
	if i := slices.Index(args, "--"); i >= 0 {
		flags = args[:i]
		args = slices.Delete(slices.Clone(args), i, i+1)
	}
	for _, a := range flags {
		switch {
		case a == "-h" || a == "--h" || a == "-help" || a == "--help":
			return "", "", errHelp
		case len(a) > 1 && a[0] == '-':
			if text == "" {
				return "", "", usageErrorf("%s: unknown option %q", name, a)
			}
			return "", "", usageErrorf("%s: unknown option %q (after --, the %s may begin with \"-\": ralph %s ID -- %q)", name, a, text, name, a)
		}
	}
	if len(args) != want {
		return "", "", usageErrorf("%s: want %s, got %d%s", name, usage, len(args), hint)
	}
	if text != "" {
		arg = args[1]
		if strings.TrimSpace(arg) == "" {
			return "", "", usageErrorf("%s %s: the %s is empty", name, args[0], text)
		}
	}
	return args[0], arg, nil
}

func taskAnswerCommand() *cli.Command {
	return &cli.Command{
		Name:      "answer",
		Usage:     "answer the question a blocked story asks; the agent sees the answer from the next iteration on",
		UsageText: `ralph task answer ID "the answer"`,
		Action: storyAction("answer", func(c *cli.Context, dir, id, answer string) error {
			s, question, err := loop.AnswerStory(taskOptions(c, dir), id, answer)
			if err != nil {
				return fmt.Errorf("task answer: %w", err)
			}
			// As saved: what ralph says keeps secrets out as what it writes.
			saved := s.Answers[len(s.Answers)-1].Answer
			_, err = fmt.Fprintf(c.App.Writer, "answered %s: %q → %q (now %s)\n", s.ID, question, saved, stateNote(s))
			return err
		}),
		SkipFlagParsing: true, // see storyArgs
		OnUsageError:    onUsageError,
	}
}

func taskResetCommand() *cli.Command {
	return &cli.Command{
		Name:            "reset",
		Usage:           "make a story new again: not passing, no attempts, neither failed nor blocked (its answers are kept)",
		UsageText:       "ralph task reset ID",
		SkipFlagParsing: true, // see storyArgs
		OnUsageError:    onUsageError,
		Action: storyAction("", func(c *cli.Context, dir, id, _ string) error {
			before, after, err := loop.ResetStory(taskOptions(c, dir), id)
			if err != nil {
				return fmt.Errorf("task reset: %w", err)
			}
			w := c.App.Writer
			was := before.State
			switch {
			case before.Failed != "":
				was += ": " + before.Failed
			case before.Blocked != "":
				was += ": " + before.Blocked
			}
			if before.State != "done" && before.Attempts == 0 && before.Failed == "" && before.Blocked == "" {
				_, err = fmt.Fprintf(w, "%s is %s with no attempts: nothing to reset\n", id, stateNote(after))
				return err
			}
			if before.Attempts > 0 {
				was += plural.Of(before.Attempts, " (1 attempt)", " (%d attempts)")
			}
			_, err = fmt.Fprintf(w, "reset %s: was %s; now %s\n", id, was, stateNote(after))
			return err
		}),
	}
}

func taskBlockCommand() *cli.Command {
	return &cli.Command{
		Name:            "block",
		Usage:           "set a story aside with a question; the loop skips it until `ralph task answer`",
		UsageText:       `ralph task block ID "the question"`,
		SkipFlagParsing: true, // see storyArgs
		OnUsageError:    onUsageError,
		Action: storyAction("question", func(c *cli.Context, dir, id, question string) error {
			// As saved: what ralph says keeps secrets out as what it writes.
			question, replaced, err := loop.BlockStory(taskOptions(c, dir), id, question)
			if err != nil {
				return fmt.Errorf("task block: %w", err)
			}
			w := c.App.Writer
			switch replaced {
			case "":
				_, err = fmt.Fprintf(w, "blocked %s: %s\n", id, question)
			case question:
				_, err = fmt.Fprintf(w, "%s is already blocked on that question\n", id)
			default:
				_, err = fmt.Fprintf(w, "blocked %s: %s (replacing %q)\n", id, question, replaced)
			}
			return err
		}),
	}
}
