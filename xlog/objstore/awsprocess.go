package objstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// credential_process
// (https://docs.aws.amazon.com/sdkref/latest/guide/feature-process-credentials.html):
// a command, split into words as the AWS CLI splits it (Python's
// shlex.split, POSIX rules) and run without a shell, prints on its standard
// output
//
//	{"Version": 1, "AccessKeyId": "...", "SecretAccessKey": "...",
//	 "SessionToken": "...", "Expiration": "2026-12-04T10:00:00Z"}
//
// SessionToken and Expiration are optional (without Expiration the
// credentials do not expire). A command that exits with an error, prints
// something else or runs longer than processTimeout fails the chain with
// its standard error in the message.

// processTimeout bounds a credential_process run (the Go SDK's default).
var processTimeout = time.Minute

// processOutput is what a credential_process prints.
type processOutput struct {
	Version         int     `json:"Version"`
	AccessKeyID     string  `json:"AccessKeyId"`
	SecretAccessKey string  `json:"SecretAccessKey"`
	SessionToken    string  `json:"SessionToken"`
	Expiration      *string `json:"Expiration"`
}

func processCreds(ctx context.Context, profile, command string) (*awsCreds, error) {
	argv, err := shellSplit(command)
	if err != nil {
		return nil, profileErr(profile, "credential_process %q: %v", command, err)
	}
	if len(argv) == 0 {
		return nil, profileErr(profile, "credential_process is empty")
	}
	ctx, cancel := context.WithTimeout(ctx, processTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &limitedBuffer{&stdout, 1 << 20}, &limitedBuffer{&stderr, 16 << 10}
	cmd.WaitDelay = time.Second // a child that keeps the pipes open does not hold the run
	err = cmd.Run()
	errText := strings.TrimSpace(stderr.String())
	if errText != "" {
		errText = ": " + errText
	}
	if ctx.Err() == context.DeadlineExceeded {
		return nil, profileErr(profile, "credential_process %s did not finish in %v%s", argv[0], processTimeout, errText)
	}
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, profileErr(profile, "credential_process %s failed (%v)%s", argv[0], ee.ProcessState, errText)
		}
		return nil, profileErr(profile, "credential_process: %v", err)
	}
	var out processOutput
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return nil, profileErr(profile, "credential_process %s printed no JSON credentials (%v)%s", argv[0], err, errText)
	}
	if out.Version != 1 {
		return nil, profileErr(profile, "credential_process %s printed Version %d; the only version is 1", argv[0], out.Version)
	}
	if out.AccessKeyID == "" || out.SecretAccessKey == "" {
		return nil, profileErr(profile, "credential_process %s printed no AccessKeyId or no SecretAccessKey", argv[0])
	}
	c := &awsCreds{AccessKeyID: out.AccessKeyID, SecretAccessKey: out.SecretAccessKey, SessionToken: out.SessionToken,
		Source: "credential_process (profile " + profile + ")"}
	if out.Expiration != nil {
		t, err := time.Parse(time.RFC3339, *out.Expiration)
		if err != nil {
			return nil, profileErr(profile, "credential_process %s printed Expiration %q, not an RFC 3339 time", argv[0], *out.Expiration)
		}
		c.Expires = t
	}
	return c, nil
}

// limitedBuffer keeps the first max bytes written to it and discards the
// rest (a command must not fill the memory).
type limitedBuffer struct {
	b   *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.b.Len(); room > 0 {
		l.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// errShellSplit is returned for an unclosed quote or a trailing backslash.
var errShellSplit = errors.New("cannot split into words")

// shellSplit splits a command line into words as Python's shlex.split does
// in POSIX mode (the AWS CLI's splitting of credential_process): words are
// separated by blanks; '...' is literal; in "..." a backslash escapes only
// " and \; outside quotes a backslash escapes any character; quotes join
// with the word around them, and "" is an empty word.
func shellSplit(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case c == '\\':
			if i+1 >= len(s) {
				return nil, fmt.Errorf("%w: a backslash at the end", errShellSplit)
			}
			i++
			w.WriteByte(s[i])
			inWord = true
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("%w: no closing quote (')", errShellSplit)
			}
			w.WriteString(s[i+1 : i+1+end])
			i += 1 + end
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\') {
					i++
				}
				w.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("%w: no closing quote (\")", errShellSplit)
			}
			inWord = true
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}
