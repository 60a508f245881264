package proc

// DirVar is the variable in which ralph tells what it starts for an
// iteration, the agent and the checks, the absolute path of the loop's work
// directory. KillStrays knows by it the processes of a loop in this
// directory from those of a loop in a directory below it, which work
// there too and may carry an iteration of the same number and story.
const DirVar = "RALPH_DIR"
