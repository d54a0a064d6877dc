"""shiftlearn.model_selection"""
