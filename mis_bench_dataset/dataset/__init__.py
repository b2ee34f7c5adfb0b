"""Reading a build back: its folder format, the `BuiltDataset` handle, `datasets` loading, arrays, descriptors."""
