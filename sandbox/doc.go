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
// network, the system read-only, only the workspace writable, a private
// /tmp, every capability dropped), or on the host; either way with a
// scrubbed environment, its process group killed at the end, and resource
// limits (Limits) set by util-linux's prlimit: memory (RLIMIT_DATA),
// CPU time, processes (RLIMIT_NPROC, only in bubblewrap's user namespace,
// where the kernel counts the sandbox's own processes), file size and
// open files. Report says what works here and why not the rest.
package sandbox
