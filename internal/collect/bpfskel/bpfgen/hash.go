package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
)

// sourcePrefix starts the line of a generated file that records what it
// was generated from, so a test can tell a stale object without clang.
const sourcePrefix = "// Source: sha256:"

var includeLine = regexp.MustCompile(`(?m)^\s*#\s*include\s+"([^"]+)"`)

// sourceHash is the sha256 of source and of every header it reaches with
// #include "…" (looked up beside the file that includes it, then in
// dirs), each as its base name and content, in the order first reached.
// System headers (<…>) are not followed: they are the toolchain's.
func sourceHash(source string, dirs []string) (string, error) {
	h := sha256.New()
	seen := map[string]bool{}
	var add func(path string) error
	add = func(path string) error {
		if seen[path] {
			return nil
		}
		seen[path] = true
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %d\n", filepath.Base(path), len(b))
		h.Write(b)
		for _, m := range includeLine.FindAllSubmatch(b, -1) {
			found := ""
			for _, d := range append([]string{filepath.Dir(path)}, dirs...) {
				if p := filepath.Join(d, string(m[1])); fileExists(p) {
					found = p
					break
				}
			}
			if found == "" {
				return fmt.Errorf("%s includes %q, found in none of %v", path, m[1], dirs)
			}
			if err := add(found); err != nil {
				return err
			}
		}
		return nil
	}
	if err := add(source); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}
