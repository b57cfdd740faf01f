globals()["made"] = lambda event, context: "made by globals()"
