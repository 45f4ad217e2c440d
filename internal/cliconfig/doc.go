// Package cliconfig owns how a command's settings are layered: the command
// line, then the environment variable a flag's usage names, then the YAML
// file of --config, then the flag's default (Apply), and what `memindex
// config show` may reveal of them (Effective: secrets redacted, credentials
// in URLs removed, provider keys listed as present or not).
//
// A flag's environment variables are read from its usage (EnvNames: every
// NAME_LIKE word in parentheses, "... (MEMINDEX_DATA)"), so a new flag takes
// part with no registration of its own. A config file maps flag names, or
// their environment variable names, to plain values or lists of them; every
// mistake in it is an error naming the file, the line, the key and what to
// do, and a secret (SecretFlags) is refused there.
//
// It works on a flag.FlagSet it is given and must not register flags, decide
// which commands read a file, or print: that is cmd/memindex's. It must never
// put a secret's value in an error or a Setting.
package cliconfig
