module github.com/learnerassignor/learner

go 1.26

require (
	github.com/rogpeppe/go-internal v1.16.0
	github.com/stretchr/testify v1.12.1
)

require (
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.26.0 // indirect
	golang.org/x/tools v0.26.0 // indirect
)
