module github.com/learnerassignor/learner

go 1.26
