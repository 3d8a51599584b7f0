module github.com/coderunner/coderunner

go 1.26.8
