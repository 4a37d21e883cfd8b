"""Editing YAML text in place: nodes with line positions (yaml_nodes), the text layer that keeps
comments and layout (textedit), edit operations (ops) and rendering of new values (render).
Used by convert and by the kustomize model; knows nothing of GPUs or Kubernetes kinds."""
