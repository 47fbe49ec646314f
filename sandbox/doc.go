// Package sandbox confines what tools do to the workspace: file paths that
// lead outside it are refused, whether by "..", an absolute path or a
// symbolic link, including a link swapped while a call is under way.
package sandbox
