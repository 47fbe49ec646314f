// Package sandbox confines what tools do to the workspace: file paths that
// lead outside it are refused, whether by "..", an absolute path or a
// symbolic link, including a link swapped while a call is under way.
//
// A deny list (DenyRules, DefaultDenyRules) names workspace paths that
// hold secrets or that would run code outside the sandbox: by default
// .env*, *.pem, SSH keys (id_rsa* and the like), .ssh, .aws, .gnupg,
// .netrc and .git-credentials are neither read nor written, and
// .git/hooks and .git/config are not written. Workspace refuses them with
// a *DeniedError naming the rule; inside bubblewrap, Runner masks them
// (an unreadable empty file or directory is mounted over each, and what
// may only be read is bound read-only, its parent directories bound over
// themselves so they cannot be moved aside).
//
// Runner runs commands: inside bubblewrap when Detect finds it works (no
// network, the system read-only, only the workspace writable and every
// .git in it read-only as a whole, paths not yet created included, a
// private /tmp, every capability dropped), or on the host; either way with
// an allow-listed environment (CommandEnv: PATH, HOME, LANG, LC_*, TERM,
// TZ, USER, SHELL, TMPDIR and the names Options.Env adds), no process
// outliving the command (a PID namespace in bubblewrap; on the host a
// subreaper that kills whatever escaped the process group), and resource
// limits (Limits) set by util-linux's prlimit: memory (RLIMIT_DATA), CPU
// time, processes (RLIMIT_NPROC, only in bubblewrap's user namespace,
// where the kernel counts the sandbox's own processes), file size and
// open files. Report says what works here and why not the rest.
//
// A program importing this package runs as the host commands' reaper when
// started with the argv[0] "rein-sandbox-reaper" (the package's init
// does it, before main), since Run starts the reaper by re-executing
// /proc/self/exe.
package sandbox
