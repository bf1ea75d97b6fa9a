"""The keyword options: their one documentation, their conversion into the engine's option
structs, the output kinds' checks and the hints added to the engine's errors. README.md lists
the files."""
