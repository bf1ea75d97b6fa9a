"""Reading datasets through the engine: the Loader, the MixtureLoader and what they share
(the engine opening, an epoch's iteration, the cursor and the resume state); the sources they
read (paths, tables, mixtures). README.md lists the files."""
