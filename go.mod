module github.com/ralph-harness/ralph

go 1.26

require (
	github.com/BurntSushi/toml v1.6.0
	github.com/fsnotify/fsnotify v1.10.1
	github.com/rogpeppe/go-internal v1.16.0
	github.com/urfave/cli/v2 v2.27.7
	golang.org/x/sys v0.26.0 // per architecture: O_TMPFILE and linkat (internal/atomicfile), inotify and kqueue (loop/movewatch_*), pidfd and a pipe's unread bytes (internal/proc); fsnotify requires it already
)

require (
	github.com/cpuguy83/go-md2man/v2 v2.0.7 // indirect
	github.com/russross/blackfriday/v2 v2.1.0 // indirect
	github.com/xrash/smetrics v0.0.0-20240521201337-686a1a2994c1 // indirect
	golang.org/x/tools v0.26.0 // indirect
)
