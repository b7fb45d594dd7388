module example.com/gotest

go 1.26.0

require github.com/idemcheck/idemcheck v0.0.0-00010101000000-000000000000

require (
	github.com/bmatcuk/doublestar/v4 v4.10.4 // indirect
	github.com/dunglas/httpsfv v1.1.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
)

// This example lives inside the idemcheck repository; a project of yours
// requires a released version instead and needs no replace.
replace github.com/idemcheck/idemcheck => ../..
