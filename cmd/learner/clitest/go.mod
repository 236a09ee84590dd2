module github.com/learnerassignor/learner/cmd/learner/clitest

go 1.26.0

replace github.com/learnerassignor/learner => ../../..

require github.com/rogpeppe/go-internal v1.16.0

require (
	golang.org/x/sys v0.26.0 // indirect
	golang.org/x/tools v0.26.0 // indirect
)
