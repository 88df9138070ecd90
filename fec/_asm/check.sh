#!/bin/sh
# Fails if the committed assembly and stubs in fec/ differ from what this
# generator produces. Run from anywhere: sh fec/_asm/check.sh
set -e
cd "$(dirname "$0")"
go vet .
go test -count=1 .
