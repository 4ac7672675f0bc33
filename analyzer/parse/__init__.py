"""One module per grammar (grammars/<stem>.lark); Lark Transformers that return model objects."""
