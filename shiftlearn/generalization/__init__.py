"""shiftlearn.generalization"""
